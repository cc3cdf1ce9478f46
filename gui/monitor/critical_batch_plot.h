// CriticalBatchPlot: the gradient noise scale's critical batch over a run, against the global batch.
#pragma once

#include <cstdint>

#include <QVector>
#include <qcustomplot.h>

#include "plotting/coalesced_replot.h"
#include "trainbench/metric_point.h"

namespace trainbench::gui {

// The critical batch in sequences (noise/critical_batch_sequences) on a log axis, with a band
// of one relative error either side (noise/critical_batch_rel_error), and the global batch B
// (train/global_batch) as a step line: where the curve runs above B, a larger batch (more
// accumulation steps, the same memory) would use each step's compute better. X is the
// optimizer step. Hidden by its view until the first estimate arrives (dataStarted): a run
// with one micro-batch a window has none. Redraws coalesce like the other plots'.
class CriticalBatchPlot : public QCustomPlot {
    Q_OBJECT

public:
    explicit CriticalBatchPlot(QWidget* parent = nullptr);

    void reset();
    // Takes the keys above; others are ignored.
    void addPoints(const QVector<MetricPoint>& points);
    void flushReplot();

    bool hasData() const { return critical_->dataCount() > 0; }
    QCPGraph* criticalGraph() const { return critical_; }
    QCPGraph* bandLowGraph() const { return band_low_; }
    QCPGraph* bandHighGraph() const { return band_high_; }
    QCPGraph* globalBatchGraph() const { return global_batch_; }
    // "critical batch ~42 sequences (± 13 %), B 16": the newest estimate, for the title.
    QString summary() const;

Q_SIGNALS:
    void dataStarted();

private:
    void rebuild();

    QCPGraph* critical_ = nullptr;
    QCPGraph* band_low_ = nullptr;
    QCPGraph* band_high_ = nullptr;
    QCPGraph* global_batch_ = nullptr;
    QCPTextElement* title_ = nullptr;
    QMap<int64_t, double> errors_;  // by step, until the estimate of that step arrives
    CoalescedReplot* replot_ = nullptr;  // each redraw fits the axes and the title first
};

}  // namespace trainbench::gui
