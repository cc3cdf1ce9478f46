// RendezvousAbortSignal: one rank's abort, seen by the ranks of other processes within a moment.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace trainbench {

// Ranks in separate processes share nothing but the rendezvous store. A rank that stops or
// fails early raise()s a key there; every rank's watcher thread looks for it a few times a
// second and calls `on_abort(reason)` once, so a rank waiting in a collective is released at
// once instead of at runtime.comm_timeout_s.
class RendezvousAbortSignal {
public:
    RendezvousAbortSignal(c10::intrusive_ptr<c10d::Store> store, std::function<void(const std::string&)> on_abort,
                     std::chrono::milliseconds poll = std::chrono::milliseconds(200));
    ~RendezvousAbortSignal();
    RendezvousAbortSignal(const RendezvousAbortSignal&) = delete;
    RendezvousAbortSignal& operator=(const RendezvousAbortSignal&) = delete;

    // Tells every rank (this one's watcher too, which then stays quiet). Never throws: a store
    // that cannot be reached leaves the others to their timeout.
    void raise(const std::string& reason);

    // Looks for another rank's abort now, as the watcher does (its callback runs once, whoever
    // finds the key first). True when one was raised: a collective that failed because that rank
    // left is its abort, not a lost rank.
    bool checkNow();

private:
    void watch();
    // Reads the key; calls on_abort_ once when another rank set it. Throws when the store is gone.
    bool fireIfRaised();
    c10::intrusive_ptr<c10d::Store> store_;  // the watcher's own connection (a clone)
    std::function<void(const std::string&)> on_abort_;
    const std::chrono::milliseconds poll_;
    std::mutex mutex_;
    std::mutex check_mutex_;  // one reader of the key at a time: the watcher, or checkNow
    std::condition_variable wake_;
    bool closing_ = false;
    std::atomic<bool> raised_here_{false};
    std::atomic<bool> fired_{false};
    std::thread watcher_;
};

}  // namespace trainbench
