// RemoteFeed: the copy of a remote run tailed while the sync writes it.
#include "runs/remote_feed.h"

#include <utility>

namespace trainbench::gui {

RemoteFeed::RemoteFeed(RemoteLocation location, QString run_id, QObject* parent)
    : StoreTail(location.cacheFolder(), run_id, parent) {
    sync_ = new RemoteRunSync(std::move(location), std::move(run_id), this);
    // A copy read before is shown at once; a first read waits until the copy holds what the
    // host had (the run as stored then, and its status, which may already be its end).
    const auto startTail = [this] {
        if (!stopped_) StoreTail::start();
    };
    connect(sync_, &RemoteRunSync::copyFound, this, startTail);
    connect(sync_, &RemoteRunSync::caughtUp, this, startTail);
    connect(sync_, &RemoteRunSync::committed, this, &StoreTail::readSoon);
}

RemoteFeed::~RemoteFeed() = default;

void RemoteFeed::start() {
    stopped_ = false;
    sync_->start();
}

void RemoteFeed::stop() {
    stopped_ = true;
    sync_->stop();
    StoreTail::stop();
}

}  // namespace trainbench::gui
