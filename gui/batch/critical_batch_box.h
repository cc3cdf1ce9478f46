// CriticalBatchBox: the batch panel's line on the critical batch. It shows the newest run's
// estimate (or a checkpoint's, measured here at fixed weights) against the shown global batch B,
// with a sentence of advice on K, and runs that measurement on a worker thread.
#pragma once

#include <QString>
#include <QWidget>

#include "trainbench/run_config.h"

class QLabel;
class QPushButton;

namespace trainbench::gui {

class NoiseScaleWorker;

class CriticalBatchBox : public QWidget {
    Q_OBJECT

public:
    explicit CriticalBatchBox(QWidget* parent = nullptr);

    // The config whose B (and batch policy) the estimate is set against.
    void setRunConfig(const RunConfig& config);
    // The run's estimate (noise/critical_batch_sequences and its relative error) at `step`;
    // 0 sequences: none measured.
    void setEstimate(double sequences, double relative_error, int64_t step);
    // The newest checkpoint of the run (a directory) that measure() would use; empty: none yet.
    void setLatestCheckpoint(const QString& path, int64_t step);
    // While a run is live or an exploration runs, no measurement starts.
    void setBlocked(bool blocked);
    // Starts measuring the newest checkpoint; false when there is none, it is blocked, or one runs.
    bool measure();
    bool isMeasuring() const;

Q_SIGNALS:
    // A measurement started (the button's or measure()'s).
    void measuringStarted();
    // A measurement ended (its result is shown, or the error).
    void measured(bool ok);

private:
    void show(double sequences, double relative_error, int64_t step, bool at_checkpoint);
    void showEstimate();
    void updateButton();

    RunConfig config_;
    QLabel* label_ = nullptr;
    QPushButton* measure_button_ = nullptr;
    NoiseScaleWorker* worker_ = nullptr;
    QString checkpoint_path_;
    int64_t checkpoint_step_ = 0;
    bool blocked_ = false;
    bool at_checkpoint_ = false;  // the estimate shown is a checkpoint's
    double sequences_ = 0, relative_error_ = 0;
    int64_t step_ = 0;
};

}  // namespace trainbench::gui
