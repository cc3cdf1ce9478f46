// RemoteRunSync: keeps the workbench's copy of one remote run up to date through `ssh … trainbench-cli follow --json`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <QByteArray>
#include <QObject>
#include <QString>
#include <QTimer>

#include "runs/remote_location.h"
#include "trainbench/run_stream.h"

class QProcess;

namespace trainbench::gui {

class StoreReader;

// The copy is a run store of its own under the user's cache (RemoteLocation::cacheFolder), so
// every view reads a remote run as it reads a local one (a StoreTail, CompareRuns), and a run
// read once is read again from the copy: only the steps after it cross the network.
//
// A connection asks for the run from S, the last step the copy holds. A step may have arrived
// in part, and what did is the first of that step's points in commit order, which the stream
// sends in the same order: as many as the copy holds of step S are skipped (and of the events
// from S, likewise), so no point is lost or held twice and nothing in the copy is rewritten (a
// view reading it never sees a point again). The stream's header says how many points the run
// has before S; a copy holding another count (the run was resumed from an earlier checkpoint
// and written again there) is read afresh from step 0. A connection that drops before the run's end record is made again
// after a backoff (1 s, doubling to 30 s; setRetryDelays), from the copy's last step again.
// What cannot succeed by retrying stops: ssh refusing without a password or passphrase, the
// CLI or the run missing on the host, a stream this build cannot read.
//
// The copy says `running` from a stream's start until its end record (whatever the run record
// said), so a reader of the copy never sees a finished run whose points are still arriving.
//
// Thread contract: lives on the GUI thread, with its signals; the copy is written on its
// StoreReader's thread, in the order the records arrived.
class RemoteRunSync : public QObject {
    Q_OBJECT

public:
    enum class State { Idle, Connecting, CatchingUp, Live, Reconnecting, Ended, Failed };

    RemoteRunSync(RemoteLocation location, QString run_id, QObject* parent = nullptr);
    ~RemoteRunSync() override;

    // The one sync of this run of this store in the process, shared by whoever follows it (the
    // Training tab, Compare): two writers of one copy would each skip and add points on their
    // own. A sync that failed is replaced by a new one. The last owner's release stops it.
    // Owners connect to its signals and never stop() it.
    static std::shared_ptr<RemoteRunSync> shared(const RemoteLocation& location, const QString& run_id);

    const RemoteLocation& location() const { return location_; }
    const QString& runId() const { return run_id_; }
    const QString& cacheFolder() const { return cache_folder_; }
    State state() const { return state_; }
    // What the state means, for a status line ("reconnecting to gpu01 in 4 s (attempt 3): …").
    const QString& stateText() const { return state_text_; }
    // The copy held the run (from an earlier read) when the sync started.
    bool foundCopy() const { return copy_found_; }
    // Everything the host held when the last connection began is in the copy.
    bool isCaughtUp() const { return caught_up_; }
    // Connections whose stream began (header received).
    int connections() const { return connections_; }
    // The step the last connection asked the host from (the copy's last step then).
    int64_t fromStep() const { return from_step_; }

    // Connects; does nothing unless idle.
    void start();
    // Ends the connection and every retry; what is in the copy stays.
    void stop();
    // Ends the connection as a network drop would (the user's "Reconnect", and tests): the
    // sync reconnects after the first retry delay.
    void dropConnection();
    void setRetryDelays(int first_ms, int max_ms);

Q_SIGNALS:
    void stateChanged(trainbench::gui::RemoteRunSync::State state, const QString& text);
    // The copy holds the run from an earlier read: it can be shown before the host answers.
    void copyFound();
    // More of the run is in the copy: points, events or its record.
    void committed();
    // The copy holds everything the host held when this connection began.
    void caughtUp();
    // The run's end is in the copy (its status in the record).
    void ended(const QString& status);
    // The host holds another run before the copy's last step than the copy (it was resumed from
    // an earlier checkpoint and written again): the copy is read afresh from step 0. A reader of
    // the copy from before has what it read, not what follows (its rows are gone).
    void rewritten();

private:
    struct Batch;

    void connectFrom();
    // What the copy holds of the run when a connection is made.
    struct Copy {
        bool has_run = false;
        int64_t last_step = 0;      // S: the stream is asked for from here
        int64_t points_before = 0;  // the copy's points before S
        std::optional<MetricPoint> last_before;  // the last of them (by row)
        int64_t points_at = 0;      // its points of step S (a prefix of that step's, in commit order)
        int64_t events_from = 0;    // its events of step S and after
    };
    void launch(const Copy& copy);
    void readOutput();
    void onFinished(int exit_code, bool crashed);
    void take(std::vector<RunStreamRecord> records);
    void write(Batch batch);
    void fail(const QString& message);
    void retryLater(const QString& why);
    void setState(State state, const QString& text);
    void endProcess();

    RemoteLocation location_;
    QString run_id_;
    QString cache_folder_;
    StoreReader* cache_ = nullptr;
    QProcess* process_ = nullptr;
    RunStreamParser parser_;
    QByteArray errors_;  // the connection's stderr, its last few kilobytes
    QTimer retry_timer_;
    State state_ = State::Idle;
    QString state_text_;
    int64_t from_step_ = 0;           // of the connection in progress
    int64_t expected_points_before_ = 0;
    std::optional<MetricPoint> expected_last_before_;
    int64_t points_to_skip_ = 0;  // of step from_step_: the copy has them
    int64_t events_to_skip_ = 0;  // of step from_step_ and after: the copy has them
    int generation_ = 0;              // output of a connection that has been replaced is dropped
    int first_retry_ms_ = 1000, max_retry_ms_ = 30000, next_retry_ms_ = 1000, attempts_ = 0;
    int connections_ = 0;
    bool copy_found_ = false;
    bool caught_up_ = false;
    bool end_received_ = false;
};

}  // namespace trainbench::gui
