// The abort key: set once by whoever ends first, polled by every process's watcher.
#include "comm/rendezvous_abort_signal.h"

namespace trainbench {
namespace {

const std::string kAbortKey = "trainbench/abort";

}  // namespace

RendezvousAbortSignal::RendezvousAbortSignal(c10::intrusive_ptr<c10d::Store> store,
                                   std::function<void(const std::string&)> on_abort, std::chrono::milliseconds poll)
    : store_(store->clone()), on_abort_(std::move(on_abort)), poll_(poll) {
    // A store that stops answering (rank 0 gone) must not hold the watcher for long.
    store_->setTimeout(std::chrono::seconds(2));
    watcher_ = std::thread([this] { watch(); });
}

RendezvousAbortSignal::~RendezvousAbortSignal() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    wake_.notify_all();
    watcher_.join();
}

void RendezvousAbortSignal::raise(const std::string& reason) {
    raised_here_ = true;
    try {
        if (!store_->check({kAbortKey})) store_->set(kAbortKey, std::vector<uint8_t>(reason.begin(), reason.end()));
    } catch (const std::exception&) {  // the store is gone (rank 0 ended): nothing to tell
    }
}

bool RendezvousAbortSignal::fireIfRaised() {
    if (!store_->check({kAbortKey})) return false;
    const auto bytes = store_->get(kAbortKey);
    if (!raised_here_ && !fired_.exchange(true)) on_abort_(std::string(bytes.begin(), bytes.end()));
    return !raised_here_;
}

bool RendezvousAbortSignal::checkNow() {
    try {
        std::lock_guard lock(check_mutex_);  // the clone's connection takes one caller at a time
        return fireIfRaised();
    } catch (const std::exception&) {  // the store's server has ended: nothing to learn from it
        return false;
    }
}

void RendezvousAbortSignal::watch() {
    while (true) {
        {
            std::unique_lock lock(mutex_);
            if (wake_.wait_for(lock, poll_, [this] { return closing_; })) return;
        }
        try {  // outside the wake lock: the destructor must not wait behind a slow store
            std::lock_guard lock(check_mutex_);
            if (!store_->check({kAbortKey})) continue;
            fireIfRaised();
        } catch (const std::exception&) {
            return;  // the store's server (rank 0) has ended: the run is over for everyone
        }
        return;
    }
}

}  // namespace trainbench
