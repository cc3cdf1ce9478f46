// MainWindow: the workbench window: the config's key numbers and run controls beside the live plots.
#include "app/main_window.h"

#include <utility>

#include <QAction>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include "app/config_box.h"
#include "app/remote_store_dialog.h"
#include "batch/batch_panel.h"
#include "compare/compare_view.h"
#include "configure/config_presets.h"
#include "configure/configure_view.h"
#include "monitor/monitor_view.h"
#include "monitor/run_dashboard.h"
#include "queue/queue_runner.h"
#include "queue/queue_view.h"
#include "runs/engine_bridge.h"
#include "runs/runs_model.h"
#include "runs/run_ref.h"
#include "runs/runs_panel.h"
#include "runs/store_tail.h"
#include "samples/samples_panel.h"
#include "trainbench/batch_schedule.h"
#include "trainbench/config_io.h"
#include "trainbench/run_store.h"

namespace trainbench::gui {

namespace {

// The published configs whose guides' claims the batch panel's device-count dialog answers:
// DeepSeek-V2-Lite on one GPU, V2 on four, V3 on eight.
std::vector<PublishedConfig> publishedConfigs() {
    const std::vector<std::pair<QString, int64_t>> claims{{QStringLiteral("configs/deepseek/config_16B.json"), 1},
                                                          {QStringLiteral("configs/deepseek/config_236B.json"), 4},
                                                          {QStringLiteral("configs/deepseek/config_671B.json"), 8}};
    std::vector<PublishedConfig> published;
    for (const auto& [file, devices] : claims)
        for (const ConfigPreset& preset : configPresets())
            if (preset.file == file)
                published.push_back({QFileInfo(file).completeBaseName(), loadConfigPreset(preset), devices});
    return published;
}

// The steps the run takes under its batch policy (an adaptive batch: at most).
int64_t plannedSteps(const RunConfig& config) { return BatchSchedule(config).plannedSteps(); }
constexpr int kRunsDockMinWidth = 220;
constexpr int kRunsDockWidth = 360;

}  // namespace

MainWindow::MainWindow(RunConfig config, QString config_name, QWidget* parent)
    : QMainWindow(parent), config_(std::move(config)), config_name_(std::move(config_name)) {
    setObjectName(QStringLiteral("mainWindow"));
    bridge_ = new EngineBridge(this);
    buildUi();
    buildMenus();

    // Connected before anyone outside can connect, so the window has updated itself by the
    // time other receivers of runFinished (the --run-steps loop in main) look at it: the
    // phase (RunControls, connected as buildUi made it), then the dashboard, then the queue
    // (whose log line follows the run's).
    dashboard_->follow(bridge_);
    queue_runner_ = new QueueRunner(
        queue_view_, bridge_, [this](const RunQueue::Job& job, QString* refusal) { return startQueuedJob(job, refusal); },
        [this] { return batch_panel_->isExploring() || batch_panel_->isMeasuring(); }, this);
    connect(queue_runner_, &QueueRunner::logLine, dashboard_, &RunDashboard::appendLog);
    connect(queue_runner_, &QueueRunner::blocked, this,
            [this](const QString& reason) { dashboard_->setStatusText(reason, /*error=*/true); });

    showConfig();
    controls_->setPhase(RunControls::Phase::Idle);
    showReadyStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildUi() {
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    main_splitter_ = splitter;
    splitter->setObjectName(QStringLiteral("mainSplitter"));
    splitter->setChildrenCollapsible(false);

    auto* side = new QWidget(splitter);
    side_panel_ = side;
    side->setObjectName(QStringLiteral("sidePanel"));
    side->setMinimumWidth(360);
    side->setMaximumWidth(560);
    auto* side_layout = new QVBoxLayout(side);
    side_layout->setContentsMargins(10, 10, 6, 10);
    side_layout->setSpacing(10);

    // Config: the numbers that decide cost and speed, read-only.
    config_box_ = new ConfigBox(side);
    side_layout->addWidget(config_box_);

    // The work area: the config's editor, the live plots of the run, the batch split with its
    // memory and the explorer, the queue and the comparison of stored runs.
    tabs_ = new QTabWidget(splitter);
    tabs_->setObjectName(QStringLiteral("mainTabs"));
    tabs_->setDocumentMode(true);
    configure_view_ = new ConfigureView(config_, config_name_, tabs_);
    tabs_->addTab(configure_view_, tr("Configure"));
    connect(configure_view_, &ConfigureView::configEdited, this, &MainWindow::adoptEditedConfig);
    monitor_ = new MonitorView(tabs_);
    plots_ = monitor_->plots();
    tabs_->addTab(monitor_, tr("Training"));
    // The shown run's text, as it trained and from its newest checkpoint, on a page beside the
    // plots: it needs the width the plots have.
    samples_panel_ = new SamplesPanel(monitor_);
    monitor_->addPage(samples_panel_);
    // Beside the plots: the run's controls with its status and progress, its latest values
    // and its events.
    dashboard_ = new RunDashboard(monitor_, side);
    controls_ = new RunControls(bridge_, dashboard_, [this] { return startGate(); }, this);
    connect(controls_, &RunControls::startRequested, this, &MainWindow::startRun);
    connect(controls_, &RunControls::phaseChanged, this, &MainWindow::onPhaseChanged);
    side_layout->addWidget(controls_->buildRunBox(side));
    side_layout->addWidget(dashboard_->latestBox());
    side_layout->addWidget(dashboard_->eventsBox(), 1);
    connect(dashboard_, &RunDashboard::eventShown, samples_panel_, &SamplesPanel::addEvent);
    connect(dashboard_, &RunDashboard::watchChanged, this, [this] {
        controls_->updateStartButton();
        showConfigNumbers();
    });
    batch_panel_ = new BatchPanel(tabs_);
    tabs_->addTab(batch_panel_, tr("Batch && memory"));
    connect(dashboard_, &RunDashboard::criticalBatchMeasured, batch_panel_, &BatchPanel::setCriticalBatch);
    connect(dashboard_, &RunDashboard::checkpointWritten, batch_panel_, &BatchPanel::setLatestCheckpoint);
    connect(batch_panel_, &BatchPanel::configEditRequested, this, [this](const ConfigEdit& edit) {
        // The panel disables its edits while a run is live; should one slip through, it gets
        // the window's config back, so it never shows a config that is not in force.
        if (!applyEdit(edit)) batch_panel_->setRunConfig(config_);
    });
    batch_panel_->setPublishedConfigs(publishedConfigs());
    connect(batch_panel_, &BatchPanel::exploringChanged, controls_, &RunControls::updateStartButton);
    connect(batch_panel_, &BatchPanel::planChanged, this, [this] {
        controls_->updateStartButton();
        // A new split can make the plan fit or not: the ready line says which, until a run.
        if (controls_->phase() == RunControls::Phase::Idle && !dashboard_->watchedTail()) showReadyStatus();
    });
    queue_view_ = new QueueView(tabs_);
    queue_view_->setObjectName(QStringLiteral("queueView"));
    tabs_->addTab(queue_view_, tr("Queue"));
    connect(queue_view_, &QueueView::startRequested, this, &MainWindow::startQueue);
    connect(queue_view_, &QueueView::stopRequested, this, &MainWindow::stopQueue);
    connect(queue_view_, &QueueView::compareRequested, this, &MainWindow::compareRuns);
    compare_view_ = new CompareView(QString(), tabs_);
    tabs_->addTab(compare_view_, tr("Compare"));

    // The runs of the store: pick runs here, see them on the Compare tab. The list and the
    // config and run controls take turns at the left: the other tabs need the controls and
    // all the width that is left (the window stays 1280 wide), comparing needs the list.
    runs_dock_ = new QDockWidget(tr("Runs"), this);
    runs_dock_->setObjectName(QStringLiteral("runsDock"));
    runs_dock_->setFeatures(QDockWidget::DockWidgetMovable);
    runs_panel_ = new RunsPanel(QString(), runs_dock_);
    runs_panel_->setMinimumWidth(kRunsDockMinWidth);
    runs_dock_->setWidget(runs_panel_);
    addDockWidget(Qt::LeftDockWidgetArea, runs_dock_);
    runs_dock_->hide();
    connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::updateSidePanels);
    connect(runs_panel_, &RunsPanel::selectionChanged, compare_view_, &CompareView::setRuns);
    connect(runs_panel_, &RunsPanel::watchRequested, this, &MainWindow::watchRun);

    splitter->addWidget(side);
    splitter->addWidget(tabs_);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({430, 850});
    setCentralWidget(splitter);
    // The Configure tab comes first in the row, but a window opens on the live plots.
    tabs_->setCurrentWidget(monitor_);
}

void MainWindow::buildMenus() {
    QMenu* file_menu = menuBar()->addMenu(tr("&File"));
    file_menu->setObjectName(QStringLiteral("fileMenu"));
    QAction* open_config_action = file_menu->addAction(tr("&Open config…"), this, &MainWindow::openConfigWithDialog);
    open_config_action->setObjectName(QStringLiteral("openConfigAction"));
    open_config_action->setShortcut(QKeySequence::Open);
    QAction* save_config_action = file_menu->addAction(tr("&Save config as…"), this, &MainWindow::saveConfigWithDialog);
    save_config_action->setObjectName(QStringLiteral("saveConfigAction"));
    save_config_action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_S));
    QAction* open_remote_action =
        file_menu->addAction(tr("Open &remote store…"), this, &MainWindow::openRemoteStoreWithDialog);
    open_remote_action->setObjectName(QStringLiteral("openRemoteStoreAction"));
    open_remote_action->setToolTip(tr("List the runs of a store on another machine (over ssh) beside the local ones"));
    file_menu->addSeparator();
    QAction* quit_action = file_menu->addAction(tr("&Quit"), this, &QWidget::close);
    quit_action->setObjectName(QStringLiteral("quitAction"));
    quit_action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));

    QMenu* edit_menu = menuBar()->addMenu(tr("&Edit"));
    edit_menu->setObjectName(QStringLiteral("editMenu"));
    QAction* undo_action = configure_view_->undoAction();
    undo_action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Z));
    QAction* redo_action = configure_view_->redoAction();
    redo_action->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z));
    edit_menu->addAction(undo_action);
    edit_menu->addAction(redo_action);

    QMenu* run_menu = menuBar()->addMenu(tr("&Run"));
    run_menu->setObjectName(QStringLiteral("runMenu"));
    run_menu->addAction(controls_->startAction());
    run_menu->addAction(controls_->pauseAction());
    run_menu->addAction(controls_->stopAction());
    run_menu->addSeparator();
    QAction* enqueue_action = run_menu->addAction(tr("&Enqueue config"), this, [this] {
        queue_view_->enqueueShownConfig();
        showTab(Tab::Queue);
    });
    enqueue_action->setObjectName(QStringLiteral("enqueueAction"));
    enqueue_action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
}

void MainWindow::updateSidePanels() {
    const bool comparing = tabs_->currentWidget() == compare_view_;
    side_panel_->setVisible(!comparing);
    runs_dock_->setVisible(comparing);
    fitRunsDock();
}

bool MainWindow::setRunConfig(RunConfig config, QString config_name) {
    if (bridge_->isLive()) return false;
    stopWatching();
    config_ = std::move(config);
    config_name_ = std::move(config_name);
    configure_view_->resetConfig(config_, config_name_);
    showConfig();
    controls_->setPhase(RunControls::Phase::Idle);
    showReadyStatus();
    return true;
}

bool MainWindow::applyEdit(const ConfigEdit& edit) {
    if (bridge_->isLive()) return false;
    try {
        config_ = withEdit(config_, edit);
    } catch (const ConfigError& refused) {
        dashboard_->setStatusText(tr("Cannot apply %1: %2").arg(edit.description, QString::fromUtf8(refused.what())),
                                  /*error=*/true);
        return false;
    }
    showConfigNumbers();
    configure_view_->recordWindowEdit(config_, edit.description);
    return true;
}

void MainWindow::adoptEditedConfig(const RunConfig& config, const QString& config_name) {
    // The view is locked while a run is live; should an edit slip through, the run's config stays.
    if (bridge_->isLive()) return;
    config_ = config;
    config_name_ = config_name;
    showConfigNumbers();
    batch_panel_->setRunConfig(config_);
    // The launch lines name the config's file where there is one.
    batch_panel_->setConfigFile(QFileInfo(config_name_).isFile() ? config_name_ : QString());
    // After a run its plots and final status stay until the next start; so do a watched run's.
    if (controls_->phase() == RunControls::Phase::Idle && !dashboard_->watchedTail()) {
        dashboard_->showPlanned(config_);
        showReadyStatus();
    }
}

void MainWindow::openConfigWithDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open config"), QFileInfo(config_name_).absolutePath(),
                                                      tr("Run configs (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    if (configure_view_->openFile(path, &error)) {
        showTab(Tab::Configure);
    } else {
        QMessageBox::warning(this, tr("Open config"), tr("Cannot open %1:\n%2").arg(path, error));
    }
}

void MainWindow::saveConfigWithDialog() {
    const QString suggested = QFileInfo(config_name_).exists() ? QFileInfo(config_name_).absoluteFilePath()
                                                               : QFileInfo(config_name_).completeBaseName() +
                                                                     QStringLiteral(".json");
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Save config as"), suggested, tr("Run configs (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    if (!configure_view_->saveFile(path, &error)) QMessageBox::warning(this, tr("Save config"), error);
}

void MainWindow::fitRunsDock() {
    // Before the window is shown it has no size to share yet; showEvent calls again.
    if (isVisible() && runs_dock_->isVisible()) resizeDocks({runs_dock_}, {kRunsDockWidth}, Qt::Horizontal);
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    fitRunsDock();
}

void MainWindow::showTab(Tab tab) {
    switch (tab) {
    case Tab::Configure: tabs_->setCurrentWidget(configure_view_); break;
    case Tab::Training: tabs_->setCurrentWidget(monitor_); break;
    case Tab::Samples:
        tabs_->setCurrentWidget(monitor_);
        monitor_->showPage(samples_panel_);
        break;
    case Tab::Batch: tabs_->setCurrentWidget(batch_panel_); break;
    case Tab::Queue: tabs_->setCurrentWidget(queue_view_); break;
    case Tab::Compare: tabs_->setCurrentWidget(compare_view_); break;
    }
}

void MainWindow::compareRuns(const QStringList& run_ids) {
    runs_panel_->selectRuns(run_ids);
    compare_view_->setRuns(run_ids);
    showTab(Tab::Compare);
}

bool MainWindow::rememberLayout() {
    remembers_layout_ = true;
    return restoreLayout();
}

WindowLayout MainWindow::layoutParts() const {
    return {const_cast<MainWindow*>(this), main_splitter_, configure_view_->splitter(), tabs_};
}

void MainWindow::saveLayout() const { saveWindowLayout(layoutParts()); }

bool MainWindow::restoreLayout() {
    const bool restored_tab = restoreWindowLayout(layoutParts());
    // The remembered dock state may show the runs list on a tab that has no use for it.
    updateSidePanels();
    return restored_tab;
}

void MainWindow::showConfig() {
    showConfigNumbers();
    batch_panel_->setRunConfig(config_);
    batch_panel_->setConfigFile(QFileInfo(config_name_).isFile() ? config_name_ : QString());
    dashboard_->showPlanned(config_);
}

void MainWindow::showConfigNumbers() {
    queue_view_->setBaseConfig(config_, config_name_);
    // While a run is watched its numbers are the ones beside its plots; the window's own
    // config, which Start trains, stays on the Configure tab.
    const StoreTail* tail = dashboard_->watchedTail();
    const bool watched = tail && dashboard_->watchedConfig();
    const RunConfig& config = watched ? *dashboard_->watchedConfig() : config_;
    const QString origin = watched ? tr("run %1 (watched)").arg(tail->runId()) : config_name_;
    setWindowTitle(tr("Trainbench — %1").arg(origin));
    config_box_->showConfig(config, origin, watched);
}

void MainWindow::flushView() {
    monitor_->flushReplot();
    samples_panel_->flush();
    // A label the flush rewrote (the samples' count) is laid out before the grab, not after.
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
}

bool MainWindow::startRun() {
    if (bridge_->isLive()) return false;
    if (batch_panel_->isExploring() || batch_panel_->isMeasuring()) {
        // Both would train on the same cores: each measurement would slow the other down.
        dashboard_->setStatusText(tr("The batch panel is measuring (the explorer, or a checkpoint's critical batch): "
                                     "let it finish, then start."),
                                  /*error=*/true);
        return false;
    }
    // What the Configure tab shows is what starts: a JSON edit still waiting for its pause is
    // taken now, and one that does not parse stops here.
    if (!configure_view_->commitPendingEdit()) {
        dashboard_->setStatusText(
            tr("Not started: the JSON on the Configure tab does not parse: %1").arg(configure_view_->jsonError()),
            /*error=*/true);
        return false;
    }
    stopWatching();
    dashboard_->resetRun(config_);

    // An invalid config on the Configure tab was never adopted: hand it to the engine anyway,
    // which refuses it with the same message the tab shows (startFailed), rather than quietly
    // training the last valid config.
    const RunConfig& to_start = configure_view_->issues().empty() ? config_ : configure_view_->config();
    if (!bridge_->start(to_start, QueueView::runNameOf(config_name_))) return false;
    // The bridge records the run in the default store; its samples arrive as it trains.
    samples_panel_->showRun(QString::fromStdString(RunStore::defaultFolder()), bridge_->runId());
    controls_->started(config_, config_name_);
    showTab(Tab::Training);
    return true;
}

void MainWindow::togglePause() { controls_->togglePause(); }

void MainWindow::stopRun() { controls_->stop(); }

void MainWindow::closeEvent(QCloseEvent* event) {
    // The bridge's destruction joins the ranks, the panel's the explorer; asking both to stop
    // now makes that quick.
    if (bridge_->isLive()) bridge_->stop();
    batch_panel_->stopExploring();
    if (remembers_layout_) saveLayout();
    QMainWindow::closeEvent(event);
}

RunControls::StartGate MainWindow::startGate() const {
    const StoreTail* tail = dashboard_->watchedTail();
    return {batch_panel_->isExploring(), batch_panel_->startRefusal(), tail ? tail->runId() : QString()};
}

void MainWindow::onPhaseChanged(RunControls::Phase phase) {
    const bool live = RunControls::isLive(phase);
    batch_panel_->setRunLive(live);
    configure_view_->setLocked(live);
}

void MainWindow::showReadyStatus() {
    // Start trains where runtime says, whatever machine the plan is for.
    const QString where = isChoice(config_.target.kind, TargetKind::Here)
                              ? QString()
                              : tr(" It trains on this machine (runtime), not on the planned target.");
    if (batch_panel_->startRefusal().isEmpty())
        dashboard_->setStatusText(tr("Ready: press Start to train %1 steps.").arg(plannedSteps(config_)) + where);
    else
        dashboard_->setStatusText(tr("Does not fit this machine: see Batch & memory for what it needs."),
                                  /*error=*/true);
}

void MainWindow::startQueue() { queue_runner_->start(); }

void MainWindow::stopQueue() { queue_runner_->stop(); }

bool MainWindow::startQueuedJob(const RunQueue::Job& job, QString* refusal) {
    // The job's config becomes the window's, so the numbers beside the plots are the run's.
    // Queued runs keep the tab the user is on; the Training tab shows each live.
    QWidget* shown_tab = tabs_->currentWidget();
    setRunConfig(job.config, job.name);
    const bool started = startRun();
    tabs_->setCurrentWidget(shown_tab);
    if (!started) *refusal = dashboard_->statusText();
    return started;
}

bool MainWindow::watchRun(const QString& run_id) {
    const RunRef ref = resolveRunRef(run_id);
    if (bridge_->isLive()) {
        dashboard_->setStatusText(
            tr("Cannot watch run %1 while this window's run is live: stop it first.").arg(ref.run_id), /*error=*/true);
        return false;
    }
    if (ref.remote) dashboard_->watchRemote(*ref.remote, ref.run_id, config_);
    else dashboard_->watch(runs_panel_->model()->storeFolder(), ref.run_id, config_);
    // Before the tail's first read, which replays the run's samples.
    samples_panel_->showRun(ref.folder(runs_panel_->model()->storeFolder()), ref.run_id);
    showTab(Tab::Training);
    return true;
}

void MainWindow::openRemoteStore(const RemoteLocation& location) {
    RemoteStoreDialog::rememberRecent(location);
    runs_panel_->addRemote(location);
    runs_dock_->show();
}

void MainWindow::openRemoteStoreWithDialog() {
    RemoteStoreDialog dialog(this);
    if (dialog.exec() != QDialog::Accepted) return;
    if (const std::optional<RemoteLocation> location = dialog.location()) openRemoteStore(*location);
}

void MainWindow::stopWatching() { dashboard_->stopWatching(); }

StoreTail* MainWindow::storeTail() const { return dashboard_->watchedTail(); }

QString MainWindow::watchedRunId() const {
    const StoreTail* tail = dashboard_->watchedTail();
    return tail ? tail->runId() : QString();
}

}  // namespace trainbench::gui
