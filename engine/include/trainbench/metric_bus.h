// MetricBus: a multi-producer fan-out queue from rank threads to any number of consumers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "trainbench/metric_point.h"

namespace trainbench {

// What a consumer takes in one drain.
struct BusBatch {
    std::vector<MetricPoint> points;
    std::vector<RunEvent> events;
    bool empty() const { return points.empty() && events.empty(); }
};

// One consumer's inbox. Thread contract: publishers append under `mutex_`; the owning
// consumer drains from its own thread. Bounded only by memory: a publisher never waits
// for a consumer.
class BusSubscription {
public:
    BusBatch drain();
    // Blocks until something arrives, the bus closes, or the timeout passes.
    BusBatch waitAndDrain(std::chrono::milliseconds timeout);
    bool closed() const;

private:
    friend class MetricBus;
    mutable std::mutex mutex_;
    std::condition_variable arrived_;
    BusBatch pending_;
    bool closed_ = false;
};

class MetricBus {
public:
    std::shared_ptr<BusSubscription> subscribe();
    void publish(std::vector<MetricPoint> points);
    void publish(RunEvent event);
    // Wakes every waiting consumer; later publishes are still delivered.
    void close();

private:
    // Appends to every subscriber's inbox under its lock, then wakes it.
    template <typename Append>
    void deliver(Append&& append) {
        std::lock_guard lock(mutex_);
        for (auto& s : subscribers_) {
            {
                std::lock_guard inner(s->mutex_);
                append(s->pending_);
            }
            s->arrived_.notify_all();
        }
    }

    std::mutex mutex_;
    std::vector<std::shared_ptr<BusSubscription>> subscribers_;
};

}  // namespace trainbench

// Floor: metrics/ (engine/README.md)
