// RunQueue: the configs waiting to run, running and run, as the table of the Queue tab.
#pragma once

#include <cstdint>
#include <vector>

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include "trainbench/run_config.h"
#include "trainbench/training_session.h"

namespace trainbench::gui {

// Jobs keep their order; the queue runs the first waiting one. The model only records: the
// window starts the runs (through QueueRunner) and reports back with markStarted and markFinished.
class RunQueue : public QAbstractTableModel {
    Q_OBJECT

public:
    enum class State { Waiting, Running, Completed, Failed, Stopped };
    enum Column { NameColumn, SettingsColumn, BatchColumn, StatusColumn, LossColumn, RunIdColumn, ColumnCount };

    struct Job {
        QString name;      // the run's name in the store
        QString settings;  // what distinguishes it in its grid ("lr=3e-4 m=4 K=2"), or empty
        RunConfig config;
        State state = State::Waiting;
        QString run_id;
        double final_loss = 0;  // NaN until a step has run
        QString message;        // why it failed
    };

    explicit RunQueue(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void enqueue(const QString& name, const QString& settings, const RunConfig& config);
    const Job& job(int row) const { return jobs_.at(static_cast<size_t>(row)); }
    int countIn(State state) const;
    // The row of the first waiting job, or -1.
    int nextWaiting() const;
    // The row of the running job, or -1.
    int running() const;

    void markStarted(int row, const QString& run_id);
    void markFinished(int row, const RunSummary& summary);
    // The engine refused to start it (the message says why).
    void markRefused(int row, const QString& message);

    // Removes a waiting job; false for any other.
    bool removeWaiting(int row);
    // Removes every job that has ended.
    void clearEnded();
    // The runs of the jobs that have ended, in queue order.
    QStringList endedRunIds() const;

    static QString stateName(State state);

Q_SIGNALS:
    void jobsChanged();

private:
    void rowChanged(int row);

    std::vector<Job> jobs_;
};

}  // namespace trainbench::gui
