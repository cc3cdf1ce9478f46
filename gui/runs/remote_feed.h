// RemoteFeed: a run on another machine followed live: its copy read as a StoreTail while a RemoteRunSync writes it.
#pragma once

#include <memory>

#include <QString>

#include "runs/remote_location.h"
#include "runs/remote_run_sync.h"
#include "runs/store_tail.h"

namespace trainbench::gui {

// The feed reads the copy (RemoteLocation::cacheFolder) exactly as a StoreTail reads a local
// store, so the Training tab follows a remote run through the same handlers as any other;
// the sync writes the stream into the copy and asks the tail to read after each write, so a
// point is drawn as soon as it is in the copy rather than at the next poll. The tail starts at
// once when the copy holds the run from an earlier read, else once the copy holds everything
// the host had when the stream began (a finished run is then read whole, as a local one); a
// run that ended while the connection was down ends when the reconnected stream brings its end.
//
// What the connection is doing (connecting, live, reconnecting in N s, refused) is the sync's
// stateChanged, which the watching view shows.
class RemoteFeed : public StoreTail {
    Q_OBJECT

public:
    RemoteFeed(RemoteLocation location, QString run_id, QObject* parent = nullptr);
    ~RemoteFeed() override;

    // Connects; the tail starts when the copy can be shown (above).
    void start() override;
    // Stops reading and lets the sync go (its connection ends once nobody else follows the run;
    // the copy stays).
    void stop() override;
    // The run's sync (shared with whoever else follows the run); null once stopped.
    RemoteRunSync* sync() const { return sync_.get(); }

private:
    std::shared_ptr<RemoteRunSync> sync_;
    bool stopped_ = false;
};

}  // namespace trainbench::gui
