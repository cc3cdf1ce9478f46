#include "batch/critical_batch_box.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include <cmath>

#include "batch/noise_scale_worker.h"
#include "trainbench/live_advice.h"

namespace trainbench::gui {

CriticalBatchBox::CriticalBatchBox(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    label_ = new QLabel(this);
    label_->setObjectName(QStringLiteral("criticalBatchLabel"));
    label_->setWordWrap(true);
    label_->setToolTip(tr("The gradient noise scale of the newest run: the global batch beyond which a "
                          "larger one buys little per token. A trend, not an optimum."));
    layout->addWidget(label_);
    measure_button_ = new QPushButton(tr("Measure at checkpoint"), this);
    measure_button_->setObjectName(QStringLiteral("measureCriticalBatchButton"));
    auto* row = new QHBoxLayout;
    row->addWidget(measure_button_);
    row->addStretch(1);
    layout->addLayout(row);
    worker_ = new NoiseScaleWorker(this);
    connect(measure_button_, &QPushButton::clicked, this, &CriticalBatchBox::measure);
    connect(worker_, &NoiseScaleWorker::measured, this, [this](const NoiseScaleMeasurement& m, qint64 step) {
        show(m.critical_batch_sequences, qQNaN(), step, /*at_checkpoint=*/true);
        updateButton();
        Q_EMIT measured(true);
    });
    connect(worker_, &NoiseScaleWorker::failed, this, [this](const QString& message) {
        label_->setText(tr("Could not measure the critical batch: %1").arg(message));
        updateButton();
        Q_EMIT measured(false);
    });
    showEstimate();
    updateButton();
}

void CriticalBatchBox::setRunConfig(const RunConfig& config) {
    config_ = config;
    showEstimate();  // the estimate against the new B
}

void CriticalBatchBox::setEstimate(double sequences, double relative_error, int64_t step) {
    show(sequences, relative_error, step, /*at_checkpoint=*/false);
}

void CriticalBatchBox::show(double sequences, double relative_error, int64_t step, bool at_checkpoint) {
    sequences_ = sequences;
    relative_error_ = relative_error;
    step_ = step;
    at_checkpoint_ = at_checkpoint;
    showEstimate();
}

void CriticalBatchBox::setLatestCheckpoint(const QString& path, int64_t step) {
    checkpoint_path_ = path;
    checkpoint_step_ = step;
    updateButton();
}

void CriticalBatchBox::setBlocked(bool blocked) {
    blocked_ = blocked;
    updateButton();
}

bool CriticalBatchBox::isMeasuring() const { return worker_->isRunning(); }

bool CriticalBatchBox::measure() {
    if (checkpoint_path_.isEmpty() || blocked_ || isMeasuring()) return false;
    if (!worker_->start(checkpoint_path_, checkpoint_step_)) return false;
    label_->setText(tr("Measuring the critical batch of the step-%1 checkpoint…").arg(checkpoint_step_));
    updateButton();
    Q_EMIT measuringStarted();
    return true;
}

void CriticalBatchBox::updateButton() {
    measure_button_->setEnabled(!checkpoint_path_.isEmpty() && !blocked_ && !isMeasuring());
    measure_button_->setToolTip(checkpoint_path_.isEmpty() ? tr("No checkpoint yet: a run with checkpoints makes one.")
                                                           : tr("Measure the step-%1 checkpoint (%2)")
                                                                 .arg(checkpoint_step_)
                                                                 .arg(checkpoint_path_));
}

void CriticalBatchBox::showEstimate() {
    if (!(sequences_ > 0)) {
        label_->setText(tr("Critical batch: not measured yet (a run with K × W ≥ 2 estimates it)."));
        return;
    }
    const int64_t B = std::max<int64_t>(config_.globalBatch(), 1);
    const int64_t per_step = config_.train.micro_batch_size * std::max<int64_t>(config_.runtime.world_size, 1);
    QString text = (at_checkpoint_ ? tr("Critical batch of the step-%1 checkpoint: ~%2 sequences")
                                   : tr("Critical batch at step %1: ~%2 sequences"))
                       .arg(step_)
                       .arg(sequences_, 0, 'f', sequences_ < 10 ? 1 : 0);
    if (std::isfinite(relative_error_)) text += tr(" (± %1 %)").arg(std::lround(100 * relative_error_));
    text += tr(", %1× B.").arg(sequences_ / double(B), 0, 'f', 1);
    const int64_t k = criticalBatchAccumulation(sequences_, config_.globalBatch(), config_.train.gradient_accumulation_steps);
    if (isChoice(config_.train.batch_policy, BatchPolicy::Adaptive))  // K follows the estimate by itself
        text += tr(" The adaptive batch raises K (up to %1) while the estimate stays above %2× B.")
                    .arg(config_.train.batch_adapt_max_accumulation)
                    .arg(config_.train.batch_adapt_threshold);
    else if (k > 0) text += tr(" Raise K to %1 (B %2, the same memory).").arg(k).arg(k * per_step);
    else if (k < 0) text += tr(" B wastes tokens: fewer accumulation steps would reach the same loss.");
    label_->setText(text);
}

}  // namespace trainbench::gui
