// RunControls: Start, Pause and Stop (buttons and menu actions) and the phase of the window's own run that decides what they allow.
#include "app/run_controls.h"

#include <utility>

#include <QAction>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "common/display_format.h"
#include "monitor/run_dashboard.h"
#include "runs/engine_bridge.h"
#include "trainbench/batch_schedule.h"

namespace trainbench::gui {

RunControls::RunControls(EngineBridge* bridge, RunDashboard* dashboard, std::function<StartGate()> start_gate,
                         QObject* parent)
    : QObject(parent), bridge_(bridge), dashboard_(dashboard), start_gate_(std::move(start_gate)) {
    start_action_ = new QAction(tr("&Start"), this);
    start_action_->setObjectName(QStringLiteral("startAction"));
    start_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    // Ctrl+P is Print by convention, so pausing takes Ctrl+Shift+P.
    pause_action_ = new QAction(tr("&Pause"), this);
    pause_action_->setObjectName(QStringLiteral("pauseAction"));
    pause_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    stop_action_ = new QAction(tr("S&top"), this);
    stop_action_->setObjectName(QStringLiteral("stopAction"));
    stop_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
    connect(start_action_, &QAction::triggered, this, &RunControls::startRequested);
    connect(pause_action_, &QAction::triggered, this, &RunControls::togglePause);
    connect(stop_action_, &QAction::triggered, this, &RunControls::stop);

    connect(bridge_, &EngineBridge::statusChanged, this, &RunControls::onStatus);
    connect(bridge_, &EngineBridge::runFinished, this, [this] { setPhase(Phase::Finished); });
    connect(bridge_, &EngineBridge::startFailed, this, &RunControls::onStartFailed);
}

QGroupBox* RunControls::buildRunBox(QWidget* parent) {
    auto* run_box = new QGroupBox(tr("Run"), parent);
    auto* run_layout = new QVBoxLayout(run_box);
    auto* buttons = new QHBoxLayout;
    start_button_ = new QPushButton(tr("Start"), run_box);
    start_button_->setObjectName(QStringLiteral("startButton"));
    start_button_->setDefault(true);
    pause_button_ = new QPushButton(tr("Pause"), run_box);
    pause_button_->setObjectName(QStringLiteral("pauseButton"));
    stop_button_ = new QPushButton(tr("Stop"), run_box);
    stop_button_->setObjectName(QStringLiteral("stopButton"));
    buttons->addWidget(start_button_);
    buttons->addWidget(pause_button_);
    buttons->addWidget(stop_button_);
    run_layout->addLayout(buttons);
    run_layout->addWidget(dashboard_->statusLabel());
    run_layout->addWidget(dashboard_->progressBar());
    connect(start_button_, &QPushButton::clicked, this, &RunControls::startRequested);
    connect(pause_button_, &QPushButton::clicked, this, &RunControls::togglePause);
    connect(stop_button_, &QPushButton::clicked, this, &RunControls::stop);
    return run_box;
}

bool RunControls::isLive(Phase phase) {
    return phase == Phase::Running || phase == Phase::Pausing || phase == Phase::Paused || phase == Phase::Stopping;
}

void RunControls::setPhase(Phase phase) {
    phase_ = phase;
    const bool live = isLive(phase);
    dashboard_->setRunning(phase == Phase::Running);
    updateStartButton();
    emit phaseChanged(phase);
    const bool can_pause = phase == Phase::Running || phase == Phase::Pausing || phase == Phase::Paused;
    const bool resumes = phase == Phase::Pausing || phase == Phase::Paused;
    pause_button_->setEnabled(can_pause);
    pause_button_->setText(resumes ? tr("Resume") : tr("Pause"));
    pause_action_->setEnabled(can_pause);
    pause_action_->setText(resumes ? tr("&Resume") : tr("&Pause"));
    stop_button_->setEnabled(live && phase != Phase::Stopping);
    stop_action_->setEnabled(live && phase != Phase::Stopping);
}

void RunControls::updateStartButton() {
    const StartGate gate = start_gate_();
    start_button_->setEnabled(!isLive() && !gate.exploring && gate.refusal.isEmpty());
    // Start never acts on the watched run: it trains the window's own config instead.
    const bool watching = !gate.watched_run.isEmpty();
    start_button_->setText(watching ? tr("Start own run") : tr("Start"));
    start_action_->setEnabled(start_button_->isEnabled());
    // A config the engine would refuse for its memory cannot start: the tooltip says why.
    if (gate.exploring)
        start_button_->setToolTip(tr("The batch explorer is measuring (Batch & memory tab)."));
    else if (!gate.refusal.isEmpty())
        start_button_->setToolTip(tr("Does not fit (Batch & memory tab): %1").arg(gate.refusal));
    else if (watching)
        start_button_->setToolTip(
            tr("Trains the config at the left in this window; stops watching run %1.").arg(gate.watched_run));
    else
        start_button_->setToolTip(QString());
}

void RunControls::started(const RunConfig& config, const QString& config_name) {
    logStart(config, config_name);
    setPhase(Phase::Running);
    dashboard_->setStatusText(tr("Starting: building the model…"));
}

void RunControls::logStart(const RunConfig& config, const QString& config_name) {
    const BatchSchedule schedule(config);
    const QString tokens_per_step = formatGrouped(config.tokensPerStep());
    if (schedule.ramps())
        dashboard_->appendLog(tr("started %1: %2 steps of %3 to %4 tokens (a batch ramp)")
                                  .arg(config_name)
                                  .arg(schedule.plannedSteps())
                                  .arg(formatGrouped(schedule.globalBatch(0) * config.train.seq_len))
                                  .arg(tokens_per_step));
    else if (schedule.adapts())
        dashboard_->appendLog(tr("started %1: %2 tokens in at most %3 steps of %4 tokens and more (the batch grows "
                                 "with the critical batch)")
                                  .arg(config_name)
                                  .arg(formatGrouped(schedule.plannedTokens()))
                                  .arg(schedule.plannedSteps())
                                  .arg(tokens_per_step));
    else
        dashboard_->appendLog(tr("started %1: %2 steps of %3 tokens")
                                  .arg(config_name)
                                  .arg(schedule.plannedSteps())
                                  .arg(tokens_per_step));
}

void RunControls::togglePause() {
    if (phase_ == Phase::Running) {
        bridge_->pause();
        setPhase(Phase::Pausing);
        dashboard_->setStatusText(tr("Pausing at the next micro-batch…"));
    } else if (phase_ == Phase::Paused || phase_ == Phase::Pausing) {
        bridge_->resume();
        setPhase(Phase::Running);
        dashboard_->showRunningStatus();
    }
}

void RunControls::stop() {
    if (!bridge_->isLive()) return;
    bridge_->stop();
    setPhase(Phase::Stopping);
    dashboard_->setStatusText(tr("Stopping at the next micro-batch…"));
}

void RunControls::onStatus(const QString& status) {
    if (status == QLatin1String("paused") && (phase_ == Phase::Pausing || phase_ == Phase::Running)) {
        setPhase(Phase::Paused);
        dashboard_->showPausedStatus();
    } else if (status == QLatin1String("running") && phase_ == Phase::Running) {
        dashboard_->showRunningStatus();
    }
}

void RunControls::onStartFailed(const QString& message) {
    setPhase(phase_ == Phase::Finished ? Phase::Finished : Phase::Idle);
    dashboard_->setStatusText(tr("Could not start: %1").arg(message), /*error=*/true);
    dashboard_->appendLog(tr("could not start: %1").arg(message));
}

}  // namespace trainbench::gui
