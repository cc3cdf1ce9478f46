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
    // Blocks until a stop is requested (the stall of a fault-injection test).
    void waitForStop() {
        std::unique_lock lock(mutex_);
        gate_.wait(lock, [this] { return stop_.load(); });
    }
    // A hold is a pause nobody asked for (the store cannot be written); the user's resume does
    // not lift it. Any thread may set it. Returns whether this call changed it.
    bool setHeld(bool held) {
        {
            std::lock_guard lock(mutex_);
            if (held_ == held) return false;
            held_ = held;
        }
        gate_.notify_all();
        return true;
    }
    // Paused by the user or held: the ranks wait, and collectives do not count it as a stall.
    bool paused() const {
        std::lock_guard lock(mutex_);
        return paused_ || held_;
    }
    // Called by a rank at a micro-batch boundary: blocks while paused; returns false when the
    // rank must stop.
    bool passBoundary() {
        std::unique_lock lock(mutex_);
        gate_.wait(lock, [this] { return !(paused_ || held_) || stop_.load(); });
        return !stop_.load();
    }

private:
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    std::condition_variable gate_;
    bool paused_ = false;
    bool held_ = false;
};

}  // namespace trainbench
