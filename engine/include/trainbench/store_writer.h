// StoreWriter: the thread that moves a run's points and events from the bus into the run store.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "trainbench/metric_bus.h"

namespace trainbench {

// Commits in batched transactions at least every `period`, so a killed process loses at most
// that much. The thread owns its own store connection. Ends (after a last commit) when the
// bus closes or stop() is called; the destructor stops and joins.
class StoreWriter {
public:
    StoreWriter(std::string store_folder, std::string run_id, std::shared_ptr<BusSubscription> inbox,
                std::chrono::milliseconds period = std::chrono::milliseconds(500));
    ~StoreWriter();
    void stop();
    // The first write error, if any (the run goes on; the CLI reports it).
    std::string error() const;
    int64_t pointsWritten() const { return points_written_.load(); }

private:
    void loop();
    std::string folder_, run_id_;
    std::shared_ptr<BusSubscription> inbox_;
    std::chrono::milliseconds period_;
    std::atomic<bool> stop_{false};
    std::atomic<int64_t> points_written_{0};
    mutable std::mutex error_mutex_;
    std::string error_;
    std::thread thread_;
};

}  // namespace trainbench
