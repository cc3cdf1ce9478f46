// RunFeed: what a view follows while a run is shown: its points, its events and how it ended, from whichever source.
#pragma once

#include <cstdint>

#include <QObject>
#include <QString>
#include <QVector>

#include "trainbench/metric_point.h"
#include "trainbench/training_session.h"

Q_DECLARE_METATYPE(trainbench::MetricPoint)
Q_DECLARE_METATYPE(trainbench::RunEvent)
Q_DECLARE_METATYPE(trainbench::RunSummary)

namespace trainbench::gui {

// The live session (EngineBridge) and a run another process writes to the store (StoreTail)
// deliver the same things in the same order, so the Training tab follows either through one
// set of handlers. Every signal is emitted on the GUI thread.
class RunFeed : public QObject {
    Q_OBJECT

public:
    using QObject::QObject;

    // The store's id of the run followed (empty before the bridge's first start).
    virtual const QString& runId() const = 0;
    // True while more of the run may still arrive.
    virtual bool isLive() const = 0;
    // Steps the source has counted beyond its points: with train.log_every > 1 points are
    // sparse, and only the live session keeps a counter; 0 when the points are all there is.
    virtual int64_t completedSteps() const = 0;

Q_SIGNALS:
    // Every point since the last batch, in publication order.
    void pointsArrived(const QVector<trainbench::MetricPoint>& points);
    void eventArrived(const trainbench::RunEvent& event);
    // The run's status by name (runStatusName, or the store's: interrupted too), on a change.
    void statusChanged(const QString& status);
    // Once per run, after its last points and events. `status` is the status by name, which
    // the store knows one more of than RunStatus has (interrupted: its writer died; the
    // summary says Failed). What the source does not know stays NaN (final_loss, wall_time_s).
    void runFinished(const trainbench::RunSummary& summary, const QString& status);
};

}  // namespace trainbench::gui
