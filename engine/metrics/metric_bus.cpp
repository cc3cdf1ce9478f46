// MetricBus: publishers append to every subscriber's inbox; consumers drain on their own threads.
#include "trainbench/metric_bus.h"

#include <utility>

namespace trainbench {

BusBatch BusSubscription::drain() {
    std::lock_guard lock(mutex_);
    return std::exchange(pending_, BusBatch{});
}

BusBatch BusSubscription::waitAndDrain(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, timeout, [this] { return !pending_.empty() || closed_; });
    return std::exchange(pending_, BusBatch{});
}

bool BusSubscription::closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
}

std::shared_ptr<BusSubscription> MetricBus::subscribe() {
    auto subscription = std::make_shared<BusSubscription>();
    std::lock_guard lock(mutex_);
    subscribers_.push_back(subscription);
    return subscription;
}

void MetricBus::publish(std::vector<MetricPoint> points) {
    deliver([&](BusBatch& inbox) { inbox.points.insert(inbox.points.end(), points.begin(), points.end()); });
}

void MetricBus::publish(RunEvent event) {
    deliver([&](BusBatch& inbox) { inbox.events.push_back(event); });
}

void MetricBus::close() {
    std::lock_guard lock(mutex_);
    for (auto& s : subscribers_) {
        {
            std::lock_guard inner(s->mutex_);
            s->closed_ = true;
        }
        s->arrived_.notify_all();
    }
}

}  // namespace trainbench
