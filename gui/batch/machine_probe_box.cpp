// MachineProbeBox: the batch panel's offer to measure this machine for the step time: a button, a busy bar while the probe runs on its worker, and a line saying what was measured; the figures kept in the settings.
#include "batch/machine_probe_box.h"

#include <utility>

#include <QColor>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "batch/machine_probe_worker.h"
#include "batch/plan_wording.h"
#include "trainbench/device_type.h"

namespace trainbench::gui {

namespace {

const QColor kErrorColor(176, 0, 32);

}  // namespace

MachineProbeBox::MachineProbeBox(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("machineProbeBox"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    auto* row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    button_ = new QPushButton(this);
    button_->setObjectName(QStringLiteral("measureMachineButton"));
    row->addWidget(button_);
    // No fraction to show (the probe reports only its result): a busy bar while it runs.
    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("machineProbeProgress"));
    progress_->setRange(0, 0);
    progress_->setTextVisible(false);
    progress_->hide();
    row->addWidget(progress_, 1);
    layout->addLayout(row);
    label_ = new QLabel(this);
    label_->setObjectName(QStringLiteral("machineProbeLabel"));
    label_->setWordWrap(true);
    label_->setTextFormat(Qt::PlainText);
    label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(label_);

    worker_ = new MachineProbeWorker(this);
    connect(button_, &QPushButton::clicked, this, &MachineProbeBox::measure);
    connect(worker_, &MachineProbeWorker::measured, this, &MachineProbeBox::onMeasured);
    connect(worker_, &MachineProbeWorker::failed, this, &MachineProbeBox::onFailed);

    figures_ = loadMachineFigures();
    updateControls();
}

MachineProbeBox::~MachineProbeBox() {
    // First of all: the probing thread's report must not meet half-destroyed widgets.
    delete worker_;
}

void MachineProbeBox::setPlan(const RunConfig& config, const TargetMachine& target, const StepTimePlan& time) {
    config_ = config;
    here_ = target.kind == TargetKind::Here;
    can_fill_ = probeCanFill(time.unknown, config, target);
    updateControls();
}

void MachineProbeBox::setBlocked(bool blocked) {
    blocked_ = blocked;
    updateControls();
}

bool MachineProbeBox::isMeasuring() const { return worker_->isRunning(); }

bool MachineProbeBox::measure() {
    if (blocked_ || isMeasuring()) return false;
    MachineProbeParams params;
    params.threads = probeThreads(config_);
    params.copy_bytes = probe_bytes_;
    params.directory = probedDirectory(config_);
    params.directory_bytes = probe_bytes_;
    if (deviceTypeOf(config_.runtime) == DeviceType::Cpu) params.collective_ranks = int(config_.runtime.world_size);
    if (!worker_->start(std::move(params))) return false;
    error_.clear();
    updateControls();
    Q_EMIT measuringStarted();
    return true;
}

void MachineProbeBox::onMeasured(const MachineProbe& probe) {
    figures_ = storeMachineFigures(probe);
    updateControls();
    Q_EMIT measured(true);
}

void MachineProbeBox::onFailed(const QString& message) {
    error_ = message;
    updateControls();
    Q_EMIT measured(false);
}

void MachineProbeBox::updateControls() {
    const bool measuring = isMeasuring();
    const std::string directory = probedDirectory(config_);
    button_->setText(figures_ ? tr("Measure again") : tr("Measure this machine"));
    button_->setEnabled(!blocked_ && !measuring);
    button_->setToolTip(
        (directory.empty() ? tr("Measures this machine's host memory copy rate and CPU matrix products (a few seconds)")
                           : tr("Measures this machine's host memory copy rate, CPU matrix products and the direct writes "
                                "and reads of %1 (a few seconds)")
                                 .arg(QString::fromStdString(directory))) +
        tr(", keeps the rates in this machine's settings and predicts the step time with them (what `trainbench-cli "
           "probe` measures). Rates the config's target section sets stay its own."));
    progress_->setVisible(measuring);

    QString text;
    QString tooltip;
    if (measuring) {
        text = directory.empty() ? tr("Measuring this machine: host memory copies, CPU matrix products…")
                                 : tr("Measuring this machine: host memory copies, CPU matrix products, %1 written and read…")
                                       .arg(QString::fromStdString(directory));
    } else if (!error_.isEmpty()) {
        text = tr("Could not measure this machine: %1").arg(error_);
    } else if (figures_) {
        text = describeMachineFigures(figures_->probe);
        tooltip = tr("Kept in the settings for this machine (%1), measured %2")
                      .arg(machineFiguresGroup(), figures_->measured_at);
    } else {
        text = tr("The step time needs this machine's rates: measuring takes a few seconds and is kept for the next start.");
    }
    label_->setText(text);
    label_->setToolTip(tooltip);
    label_->setStyleSheet(!measuring && !error_.isEmpty() ? QStringLiteral("color: %1;").arg(kErrorColor.name())
                                                          : QString());
    setVisible(here_ && (can_fill_ || figures_ || measuring || !error_.isEmpty()));
}

}  // namespace trainbench::gui
