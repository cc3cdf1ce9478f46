// StoreTail: follows one run of the store while another process writes it, as a RunFeed like EngineBridge.
#pragma once

#include <cstdint>
#include <memory>

#include <QString>
#include <QTimer>

#include "runs/run_feed.h"
#include "trainbench/run_store.h"

Q_DECLARE_METATYPE(trainbench::RunRecord)

namespace trainbench::gui {

class StoreReader;

// Thread contract: the tail lives on the GUI thread, and so do its signals; every read of the
// store runs on its StoreReader's thread, which also keeps what has been delivered so far.
//
// The first read delivers the run as stored (runFound, then every point and event, then
// loaded); then the tail reads again ~kPollIntervalMs (setPollInterval) after each read has been delivered, so
// reads never pile up behind a slow store, and delivers only what is new. Once the run's
// status has left `running` the last points and events are delivered, then statusChanged and
// runFinished, and polling stops. Each poll reads only the rows committed since the last one
// (RunStore::metricsAfter), so following a run of a million points costs what is new.
class StoreTail : public RunFeed {
    Q_OBJECT

public:
    StoreTail(QString store_folder, QString run_id, QObject* parent = nullptr);
    ~StoreTail() override;

    const QString& runId() const override { return run_id_; }
    // Starts the first read; does nothing when already started.
    virtual void start();
    // No more reads, and nothing more is delivered, not even a read in flight.
    virtual void stop();
    // Reads now rather than at the next poll (one in flight is followed by another at once):
    // what a writer in this process calls after each commit, so a view sees it without waiting.
    void readSoon();

    // True from start() until the run has ended, the run was not found, or stop().
    bool isPolling() const { return polling_; }
    bool isLive() const override { return polling_; }
    // The tail knows a run's steps only by its points.
    int64_t completedSteps() const override { return 0; }
    // True once the first read has been delivered.
    bool isLoaded() const { return loaded_; }
    // Reads delivered so far, the first one included.
    int readCount() const { return read_count_; }
    // The run as last read; empty before the first read.
    const RunRecord& record() const { return record_; }

    static constexpr int kPollIntervalMs = 500;
    // The wait after each delivered read (kPollIntervalMs unless set): a view that only
    // extends curves can ask less often.
    void setPollInterval(int ms) { poll_timer_.setInterval(ms); }
    // Polls without anything new after which the store is opened afresh: its opening marks a
    // run whose writer died (SIGKILL) `interrupted`, which a reader open all along never sees.
    static constexpr int kQuietPollsBeforeOwnerCheck = 20;

    // How a stored run that has left `running` ended, as the feed's runFinished reports it.
    static RunSummary summaryOf(const RunRecord& record);

    // The feed's signals: statusChanged with the store's names (running, completed, stopped,
    // failed, interrupted); runFinished once, after the last points and events of a run that
    // has left `running`.

Q_SIGNALS:
    // The run as stored at the first read, before any of its points.
    void runFound(const trainbench::RunRecord& record);
    // After the first read's points and events have been delivered.
    void loaded();
    // The run is not in the store (polling stops), or a read failed (polling goes on).
    void failed(const QString& message);

private:
    struct Progress;  // what has been delivered, known to the reader thread only
    struct Read;

    void readNow();
    void deliver(Read read);

    QString store_folder_;
    QString run_id_;
    StoreReader* reader_ = nullptr;
    std::shared_ptr<Progress> progress_;
    QTimer poll_timer_;
    RunRecord record_;
    // Tells a read from before stop() apart from one after a later start().
    int generation_ = 0;
    int read_count_ = 0;
    bool started_ = false;
    bool polling_ = false;
    bool loaded_ = false;
    bool reading_ = false;
    bool read_again_ = false;
};

}  // namespace trainbench::gui
