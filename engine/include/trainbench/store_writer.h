// StoreWriter: the thread that moves a run's points and events from the bus into the run store.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "trainbench/metric_bus.h"

namespace trainbench {

// What the writer tells its owner when the store stops (or starts again) taking writes: a
// full disk, a read-only folder. Called on the writer thread; any may be empty.
struct StoreHealthHooks {
    std::function<void(const std::string& error)> unwritable;  // the first failed commit
    std::function<void()> writable;                             // a commit succeeded again
    // The store stayed unwritable for `give_up_after`; called once.
    std::function<void(const std::string& error)> give_up;
    std::chrono::milliseconds give_up_after{std::chrono::minutes(10)};
};

// Commits in batched transactions at least every `period`, so a killed process loses at most
// that much. The thread owns its own store connection. Ends (after a last commit) when the
// bus closes or stop() is called; the destructor stops and joins.
class StoreWriter {
public:
    StoreWriter(std::string store_folder, std::string run_id, std::shared_ptr<BusSubscription> inbox,
                std::chrono::milliseconds period = std::chrono::milliseconds(500), StoreHealthHooks hooks = {});
    ~StoreWriter();
    void stop();
    // The error of the last commit when it failed and no later commit succeeded: the points
    // held since then are lost if the writer ends now. Empty when everything is written.
    std::string error() const;
    int64_t pointsWritten() const { return points_written_.load(); }

private:
    void loop();
    std::string folder_, run_id_;
    std::shared_ptr<BusSubscription> inbox_;
    std::chrono::milliseconds period_;
    StoreHealthHooks hooks_;
    std::atomic<bool> stop_{false};
    std::atomic<int64_t> points_written_{0};
    mutable std::mutex error_mutex_;
    std::string error_;
    std::thread thread_;
};

}  // namespace trainbench

// Floor: store/ (engine/README.md)
