// RemoteFeed: the copy of a remote run tailed while the sync writes it.
#include "runs/remote_feed.h"

#include <utility>

namespace trainbench::gui {

RemoteFeed::RemoteFeed(RemoteLocation location, QString run_id, QObject* parent)
    : StoreTail(location.cacheFolder(), run_id, parent), sync_(RemoteRunSync::shared(location, run_id)) {
    // A copy read before is shown at once; a first read waits until the copy holds what the
    // host had (the run as stored then, and its status, which may already be its end).
    const auto startTail = [this] {
        if (!stopped_) StoreTail::start();
    };
    connect(sync_.get(), &RemoteRunSync::copyFound, this, startTail);
    connect(sync_.get(), &RemoteRunSync::caughtUp, this, startTail);
    connect(sync_.get(), &RemoteRunSync::committed, this, &StoreTail::readSoon);
    // What the feed delivered is the old run's: it stops, and says how to see the new one.
    connect(sync_.get(), &RemoteRunSync::rewritten, this, [this] {
        StoreTail::stop();
        Q_EMIT failed(tr("run %1 was written again on %2 (resumed from an earlier checkpoint): watch it again to "
                         "read it afresh")
                          .arg(runId(), sync_->location().hostLabel()));
    });
}

RemoteFeed::~RemoteFeed() {
    // The sync may outlive the feed (another view follows the run): nothing of it reaches here.
    if (sync_) sync_->disconnect(this);
}

void RemoteFeed::start() {
    if (!sync_) return;
    stopped_ = false;
    // A sync another view started may have its copy ready already.
    if (sync_->foundCopy() || sync_->isCaughtUp() || sync_->state() == RemoteRunSync::State::Ended) StoreTail::start();
    sync_->start();
}

void RemoteFeed::stop() {
    stopped_ = true;
    if (sync_) {
        sync_->disconnect(this);
        sync_.reset();
    }
    StoreTail::stop();
}

}  // namespace trainbench::gui
