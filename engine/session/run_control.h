// RunControl: the atomics and the pause gate shared by a session and its rank threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace trainbench {

class RunControl {
public:
    void requestStop() {
        stop_.store(true);
        std::lock_guard lock(mutex_);
        gate_.notify_all();
    }
    void setPaused(bool paused) {
        {
            std::lock_guard lock(mutex_);
            paused_ = paused;
        }
        gate_.notify_all();
    }
    bool stopRequested() const { return stop_.load(); }
    bool paused() const {
        std::lock_guard lock(mutex_);
        return paused_;
    }
    // Called by a rank at a micro-batch boundary: blocks while paused; returns false when the
    // rank must stop.
    bool passBoundary() {
        std::unique_lock lock(mutex_);
        gate_.wait(lock, [this] { return !paused_ || stop_.load(); });
        return !stop_.load();
    }

private:
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    std::condition_variable gate_;
    bool paused_ = false;
};

}  // namespace trainbench
