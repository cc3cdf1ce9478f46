// MainWindow: the workbench window: the config's key numbers and run controls beside the live plots.
#include "app/main_window.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "batch/batch_panel.h"
#include "compare/compare_view.h"
#include "app/config_summary.h"
#include "common/display_format.h"
#include "trainbench/event_kind.h"
#include "trainbench/metric_keys.h"
#include "trainbench/batch_schedule.h"
#include "configure/configure_view.h"
#include "runs/engine_bridge.h"
#include "app/layout_settings.h"
#include "monitor/metric_plots.h"
#include "monitor/monitor_view.h"
#include "queue/queue_view.h"
#include "queue/run_queue.h"
#include "runs/runs_model.h"
#include "runs/runs_panel.h"
#include "runs/store_tail.h"
#include "trainbench/config_io.h"

namespace trainbench::gui {

namespace {

// The steps the run takes under its batch policy (an adaptive batch: at most).
int64_t plannedSteps(const RunConfig& config) { return BatchSchedule(config).plannedSteps(); }
QString plannedStepsText(const RunConfig& config) {
    const BatchSchedule schedule(config);
    return schedule.adapts() ? QObject::tr("at most %1").arg(schedule.plannedSteps())
                             : QString::number(schedule.plannedSteps());
}

QLabel* valueLabel(const QString& object_name, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(object_name);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setWordWrap(true);
    return label;
}

QString formatLoss(double value) {
    return std::isfinite(value) ? QString::number(value, 'f', 4) : QStringLiteral("—");
}

QString formatSeconds(double seconds) {
    if (seconds < 60.0) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
    const auto whole = static_cast<long long>(seconds);
    return QStringLiteral("%1 min %2 s").arg(whole / 60).arg(whole % 60, 2, 10, QLatin1Char('0'));
}

constexpr int kRunsDockMinWidth = 220;

// Keys of the remembered layout (openLayoutSettings).
const char* const kGeometryKey = "mainWindow/geometry";
const char* const kStateKey = "mainWindow/state";
const char* const kMainSplitterKey = "mainWindow/mainSplitter";
const char* const kConfigureSplitterKey = "mainWindow/configureSplitter";
// The open tab by its page's object name, which survives tabs being added or reordered.
const char* const kTabKey = "mainWindow/tab";
constexpr int kRunsDockWidth = 360;

QString capitalized(QString text) {
    if (!text.isEmpty()) text[0] = text[0].toUpper();
    return text;
}

}  // namespace

MainWindow::MainWindow(RunConfig config, QString config_name, QWidget* parent)
    : QMainWindow(parent), config_(std::move(config)), config_name_(std::move(config_name)) {
    setObjectName(QStringLiteral("mainWindow"));
    bridge_ = new EngineBridge(this);
    buildUi();
    buildMenus();

    // Connected before anyone outside can connect, so the window has updated itself by the
    // time other receivers of runFinished (the --run-steps loop in main) look at it.
    connect(bridge_, &EngineBridge::pointsArrived, this, &MainWindow::onPoints);
    connect(bridge_, &EngineBridge::eventArrived, this, &MainWindow::onEvent);
    connect(bridge_, &EngineBridge::statusChanged, this, &MainWindow::onStatus);
    connect(bridge_, &EngineBridge::runFinished, this, &MainWindow::onFinished);
    connect(bridge_, &EngineBridge::startFailed, this, &MainWindow::onStartFailed);

    showConfig();
    setPhase(Phase::Idle);
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
    auto* config_box = new QGroupBox(tr("Config"), side);
    config_box_ = config_box;
    config_box->setObjectName(QStringLiteral("configBox"));
    auto* config_form = new QFormLayout(config_box);
    config_form->setLabelAlignment(Qt::AlignRight);
    config_form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    config_form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    config_form->setVerticalSpacing(5);
    config_name_label_ = valueLabel(QStringLiteral("configNameLabel"), config_box);
    total_params_label_ = valueLabel(QStringLiteral("totalParamsLabel"), config_box);
    activated_params_label_ = valueLabel(QStringLiteral("activatedParamsLabel"), config_box);
    model_shape_label_ = valueLabel(QStringLiteral("modelShapeLabel"), config_box);
    batch_label_ = valueLabel(QStringLiteral("batchLabel"), config_box);
    tokens_per_step_label_ = valueLabel(QStringLiteral("tokensPerStepLabel"), config_box);
    seq_len_label_ = valueLabel(QStringLiteral("seqLenLabel"), config_box);
    steps_label_ = valueLabel(QStringLiteral("stepsLabel"), config_box);
    lr_label_ = valueLabel(QStringLiteral("lrLabel"), config_box);
    schedule_label_ = valueLabel(QStringLiteral("scheduleLabel"), config_box);
    device_label_ = valueLabel(QStringLiteral("deviceLabel"), config_box);
    QFont emphasis = batch_label_->font();
    emphasis.setBold(true);
    batch_label_->setFont(emphasis);
    total_params_label_->setFont(emphasis);
    config_form->addRow(tr("File:"), config_name_label_);
    config_form->addRow(tr("Parameters:"), total_params_label_);
    config_form->addRow(tr("Activated:"), activated_params_label_);
    config_form->addRow(tr("Model:"), model_shape_label_);
    config_form->addRow(tr("Batch:"), batch_label_);
    config_form->addRow(tr("Tokens / step:"), tokens_per_step_label_);
    config_form->addRow(tr("Sequence length:"), seq_len_label_);
    config_form->addRow(tr("Steps:"), steps_label_);
    config_form->addRow(tr("Learning rate:"), lr_label_);
    config_form->addRow(tr("Schedule:"), schedule_label_);
    config_form->addRow(tr("Device:"), device_label_);
    side_layout->addWidget(config_box);

    // Run: the controls, the status line and how far the run has come.
    auto* run_box = new QGroupBox(tr("Run"), side);
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
    status_label_ = valueLabel(QStringLiteral("statusLabel"), run_box);
    status_label_->setMinimumHeight(status_label_->fontMetrics().lineSpacing() * 2);
    status_label_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    run_layout->addWidget(status_label_);
    progress_bar_ = new QProgressBar(run_box);
    progress_bar_->setObjectName(QStringLiteral("progressBar"));
    progress_bar_->setTextVisible(true);
    progress_bar_->setFormat(tr("step %v / %m"));
    run_layout->addWidget(progress_bar_);
    side_layout->addWidget(run_box);

    connect(start_button_, &QPushButton::clicked, this, &MainWindow::startRun);
    connect(pause_button_, &QPushButton::clicked, this, &MainWindow::togglePause);
    connect(stop_button_, &QPushButton::clicked, this, &MainWindow::stopRun);

    // Latest: the newest values, for reading exact numbers off a moving curve.
    auto* live_box = new QGroupBox(tr("Latest"), side);
    auto* live_form = new QFormLayout(live_box);
    live_form->setLabelAlignment(Qt::AlignRight);
    live_form->setVerticalSpacing(5);
    loss_value_label_ = valueLabel(QStringLiteral("lossValueLabel"), live_box);
    lr_value_label_ = valueLabel(QStringLiteral("lrValueLabel"), live_box);
    throughput_value_label_ = valueLabel(QStringLiteral("throughputValueLabel"), live_box);
    elapsed_value_label_ = valueLabel(QStringLiteral("elapsedValueLabel"), live_box);
    collectives_value_label_ = valueLabel(QStringLiteral("collectivesValueLabel"), live_box);
    collectives_value_label_->setToolTip(
        tr("Collective calls of the last optimizer step (comm/collectives): buckets + 1 at ZeRO stage 0, "
           "2 x buckets + 2 at stage 1 whatever the accumulation steps, (K + 1) x buckets + 2 at stage 2, "
           "K x (3 x units - 1) + 2 at stage 3"));
    rank_peaks_value_label_ = valueLabel(QStringLiteral("rankPeaksValueLabel"), live_box);
    rank_peaks_value_label_->setWordWrap(true);
    rank_peaks_value_label_->setToolTip(tr("The most bytes each rank held during the last logged step (mem/<device>/peak_bytes)"));
    live_form->addRow(tr("Loss:"), loss_value_label_);
    live_form->addRow(tr("Learning rate:"), lr_value_label_);
    live_form->addRow(tr("Tokens / s:"), throughput_value_label_);
    live_form->addRow(tr("Collectives / step:"), collectives_value_label_);
    live_form->addRow(tr("Peak per rank:"), rank_peaks_value_label_);
    live_form->addRow(tr("Elapsed:"), elapsed_value_label_);
    side_layout->addWidget(live_box);

    auto* events_box = new QGroupBox(tr("Events"), side);
    auto* events_layout = new QVBoxLayout(events_box);
    event_log_ = new QPlainTextEdit(events_box);
    event_log_->setObjectName(QStringLiteral("eventLog"));
    event_log_->setReadOnly(true);
    event_log_->setMaximumBlockCount(1000);
    event_log_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    events_layout->addWidget(event_log_);
    side_layout->addWidget(events_box, 1);

    // The work area: the live plots of the run, and the batch split with its memory and the explorer.
    tabs_ = new QTabWidget(splitter);
    tabs_->setObjectName(QStringLiteral("mainTabs"));
    tabs_->setDocumentMode(true);
    configure_view_ = new ConfigureView(config_, config_name_, tabs_);
    tabs_->addTab(configure_view_, tr("Configure"));
    connect(configure_view_, &ConfigureView::configEdited, this, &MainWindow::adoptEditedConfig);
    monitor_ = new MonitorView(tabs_);
    plots_ = monitor_->plots();
    tabs_->addTab(monitor_, tr("Training"));
    batch_panel_ = new BatchPanel(tabs_);
    tabs_->addTab(batch_panel_, tr("Batch && memory"));
    connect(batch_panel_, &BatchPanel::splitRequested, this, [this](int64_t micro_batch, int64_t accumulation) {
        // The panel disables its edits while a run is live; should one slip through, it gets
        // the window's config back, so it never shows a split that is not in force.
        if (!setBatchSplit(micro_batch, accumulation)) batch_panel_->setRunConfig(config_);
    });
    connect(batch_panel_, &BatchPanel::memoryLayoutRequested, this,
            [this](int64_t zero_stage, const QString& activation_checkpointing, int64_t expert_parallel) {
                if (!setMemoryLayout(zero_stage, activation_checkpointing, expert_parallel))
                    batch_panel_->setRunConfig(config_);
            });
    connect(batch_panel_, &BatchPanel::exploringChanged, this, &MainWindow::updateStartButton);
    connect(batch_panel_, &BatchPanel::planChanged, this, [this] {
        updateStartButton();
        // A new split can make the plan fit or not: the ready line says which, until a run.
        if (phase_ == Phase::Idle && !watch_tail_) showReadyStatus();
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
    open_config_action_ = file_menu->addAction(tr("&Open config…"), this, &MainWindow::openConfigWithDialog);
    open_config_action_->setObjectName(QStringLiteral("openConfigAction"));
    open_config_action_->setShortcut(QKeySequence::Open);
    save_config_action_ = file_menu->addAction(tr("&Save config as…"), this, &MainWindow::saveConfigWithDialog);
    save_config_action_->setObjectName(QStringLiteral("saveConfigAction"));
    save_config_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_S));
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

    // Ctrl+P is Print by convention, so pausing takes Ctrl+Shift+P.
    QMenu* run_menu = menuBar()->addMenu(tr("&Run"));
    run_menu->setObjectName(QStringLiteral("runMenu"));
    start_action_ = run_menu->addAction(tr("&Start"), this, &MainWindow::startRun);
    start_action_->setObjectName(QStringLiteral("startAction"));
    start_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    pause_action_ = run_menu->addAction(tr("&Pause"), this, &MainWindow::togglePause);
    pause_action_->setObjectName(QStringLiteral("pauseAction"));
    pause_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    stop_action_ = run_menu->addAction(tr("S&top"), this, &MainWindow::stopRun);
    stop_action_->setObjectName(QStringLiteral("stopAction"));
    stop_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
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
    setPhase(Phase::Idle);
    showReadyStatus();
    return true;
}

bool MainWindow::setBatchSplit(int64_t micro_batch_size, int64_t gradient_accumulation_steps) {
    if (bridge_->isLive()) return false;
    config_.train.micro_batch_size = micro_batch_size;
    config_.train.gradient_accumulation_steps = gradient_accumulation_steps;
    if (config_.train.global_batch_size) config_.train.global_batch_size = config_.globalBatch();
    showConfigNumbers();
    configure_view_->recordWindowEdit(
        config_, tr("Batch split m %1 × K %2").arg(micro_batch_size).arg(gradient_accumulation_steps));
    return true;
}

bool MainWindow::setMemoryLayout(int64_t zero_stage, const QString& activation_checkpointing, int64_t expert_parallel) {
    if (bridge_->isLive()) return false;
    config_.runtime.zero_stage = zero_stage;
    config_.runtime.activation_checkpointing = activation_checkpointing.toStdString();
    config_.runtime.expert_parallel = expert_parallel;
    showConfigNumbers();
    configure_view_->recordWindowEdit(
        config_, expert_parallel > 1 ? tr("Memory layout: ZeRO stage %1, recomputation %2, expert parallelism %3")
                                           .arg(zero_stage)
                                           .arg(activation_checkpointing)
                                           .arg(expert_parallel)
                                     : tr("Memory layout: ZeRO stage %1, recomputation %2").arg(zero_stage).arg(activation_checkpointing));
    return true;
}

void MainWindow::adoptEditedConfig(const RunConfig& config, const QString& config_name) {
    // The view is locked while a run is live; should an edit slip through, the run's config stays.
    if (bridge_->isLive()) return;
    config_ = config;
    config_name_ = config_name;
    showConfigNumbers();
    batch_panel_->setRunConfig(config_);
    // After a run its plots and final status stay until the next start; so do a watched run's.
    if (phase_ == Phase::Idle && !watch_tail_) {
        progress_bar_->setRange(0, static_cast<int>(std::max<int64_t>(plannedSteps(config_), 1)));
        progress_bar_->setValue(0);
        monitor_->resetRun(config_);
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

void MainWindow::saveLayout() const {
    const std::unique_ptr<QSettings> settings = openLayoutSettings();
    settings->setValue(QLatin1String(kGeometryKey), saveGeometry());
    settings->setValue(QLatin1String(kStateKey), saveState());
    settings->setValue(QLatin1String(kMainSplitterKey), main_splitter_->saveState());
    settings->setValue(QLatin1String(kConfigureSplitterKey), configure_view_->splitter()->saveState());
    settings->setValue(QLatin1String(kTabKey), tabs_->currentWidget()->objectName());
}

bool MainWindow::restoreLayout() {
    const std::unique_ptr<QSettings> settings = openLayoutSettings();
    // Each part is restored on its own: a missing or damaged value leaves that part as built.
    restoreGeometry(settings->value(QLatin1String(kGeometryKey)).toByteArray());
    restoreState(settings->value(QLatin1String(kStateKey)).toByteArray());
    main_splitter_->restoreState(settings->value(QLatin1String(kMainSplitterKey)).toByteArray());
    configure_view_->splitter()->restoreState(settings->value(QLatin1String(kConfigureSplitterKey)).toByteArray());
    const QString tab = settings->value(QLatin1String(kTabKey)).toString();
    bool restored_tab = false;
    for (int i = 0; i < tabs_->count() && !tab.isEmpty(); ++i) {
        if (tabs_->widget(i)->objectName() == tab) {
            tabs_->setCurrentIndex(i);
            restored_tab = true;
        }
    }
    // The remembered dock state may show the runs list on a tab that has no use for it.
    updateSidePanels();
    return restored_tab;
}

void MainWindow::showConfig() {
    showConfigNumbers();
    batch_panel_->setRunConfig(config_);
    progress_bar_->setRange(0, static_cast<int>(std::max<int64_t>(plannedSteps(config_), 1)));
    progress_bar_->setValue(0);
    monitor_->resetRun(config_);
}

void MainWindow::showConfigNumbers() {
    queue_view_->setBaseConfig(config_, config_name_);
    // While a run is watched its numbers are the ones beside its plots; the window's own
    // config, which Start trains, stays on the Configure tab.
    const bool watched = watch_tail_ && watched_config_known_;
    const RunConfig& config = watched ? watched_config_ : config_;
    const QString origin = watched ? tr("run %1 (watched)").arg(watch_tail_->runId()) : config_name_;
    setWindowTitle(tr("Trainbench — %1").arg(origin));
    config_box_->setTitle(watched ? tr("Config of the watched run") : tr("Config"));
    const ConfigSummary summary = summarizeConfig(config);
    config_name_label_->setText(origin);
    total_params_label_->setText(summary.total_params);
    activated_params_label_->setText(tr("%1 per token").arg(summary.activated_params));
    model_shape_label_->setText(summary.model_shape);
    batch_label_->setText(summary.batch_equation);
    tokens_per_step_label_->setText(summary.tokens_per_step);
    seq_len_label_->setText(summary.seq_len);
    steps_label_->setText(summary.steps);
    lr_label_->setText(summary.learning_rate);
    schedule_label_->setText(summary.schedule);
    device_label_->setText(summary.device);
}

void MainWindow::flushView() {
    monitor_->flushReplot();
}

bool MainWindow::startRun() {
    if (bridge_->isLive()) return false;
    if (batch_panel_->isExploring() || batch_panel_->isMeasuring()) {
        // Both would train on the same cores: each measurement would slow the other down.
        setStatusText(tr("The batch panel is measuring (the explorer, or a checkpoint's critical batch): let it "
                         "finish, then start."),
                      /*error=*/true);
        return false;
    }
    // What the Configure tab shows is what starts: a JSON edit still waiting for its pause is
    // taken now, and one that does not parse stops here.
    if (!configure_view_->commitPendingEdit()) {
        setStatusText(tr("Not started: the JSON on the Configure tab does not parse: %1")
                          .arg(configure_view_->jsonError()),
                      /*error=*/true);
        return false;
    }
    stopWatching();
    latest_step_ = 0;
    have_loss_ = false;
    monitor_->resetRun(config_);
    progress_bar_->setRange(0, static_cast<int>(std::max<int64_t>(plannedSteps(config_), 1)));
    progress_bar_->setValue(0);
    for (QLabel* label : {loss_value_label_, lr_value_label_, throughput_value_label_, elapsed_value_label_,
                          collectives_value_label_, rank_peaks_value_label_})
        label->clear();
    rank_peaks_.clear();
    batch_panel_->setCriticalBatch(0, 0, 0);
    batch_panel_->setLatestCheckpoint(QString(), 0);  // a new run: the last one's checkpoint is not its
    event_log_->clear();

    // An invalid config on the Configure tab was never adopted: hand it to the engine anyway,
    // which refuses it with the same message the tab shows (startFailed), rather than quietly
    // training the last valid config.
    const RunConfig& to_start = configure_view_->issues().empty() ? config_ : configure_view_->config();
    if (!bridge_->start(to_start, QueueView::runNameOf(config_name_))) return false;
    const BatchSchedule schedule(config_);
    if (schedule.ramps())
        appendLog(tr("started %1: %2 steps of %3 to %4 tokens (a batch ramp)")
                      .arg(config_name_)
                      .arg(schedule.plannedSteps())
                      .arg(formatGrouped(schedule.globalBatch(0) * config_.train.seq_len))
                      .arg(formatGrouped(config_.tokensPerStep())));
    else if (schedule.adapts())
        appendLog(tr("started %1: %2 tokens in at most %3 steps of %4 tokens and more (the batch grows with "
                     "the critical batch)")
                      .arg(config_name_)
                      .arg(formatGrouped(schedule.plannedTokens()))
                      .arg(schedule.plannedSteps())
                      .arg(formatGrouped(config_.tokensPerStep())));
    else
        appendLog(tr("started %1: %2 steps of %3 tokens")
                      .arg(config_name_)
                      .arg(plannedSteps(config_))
                      .arg(formatGrouped(config_.tokensPerStep())));
    setPhase(Phase::Running);
    setStatusText(tr("Starting: building the model…"));
    showTab(Tab::Training);
    return true;
}

void MainWindow::togglePause() {
    if (phase_ == Phase::Running) {
        bridge_->pause();
        setPhase(Phase::Pausing);
        setStatusText(tr("Pausing at the next micro-batch…"));
    } else if (phase_ == Phase::Paused || phase_ == Phase::Pausing) {
        bridge_->resume();
        setPhase(Phase::Running);
        setStatusText(tr("Running · step %1 of %2").arg(latest_step_).arg(plannedStepsText(config_)));
    }
}

void MainWindow::stopRun() {
    if (!bridge_->isLive()) return;
    bridge_->stop();
    setPhase(Phase::Stopping);
    setStatusText(tr("Stopping at the next micro-batch…"));
}

void MainWindow::closeEvent(QCloseEvent* event) {
    // The bridge's destruction joins the ranks, the panel's the explorer; asking both to stop
    // now makes that quick.
    if (bridge_->isLive()) bridge_->stop();
    batch_panel_->stopExploring();
    if (remembers_layout_) saveLayout();
    QMainWindow::closeEvent(event);
}

bool MainWindow::isLivePhase(Phase phase) {
    return phase == Phase::Running || phase == Phase::Pausing || phase == Phase::Paused || phase == Phase::Stopping;
}

void MainWindow::setPhase(Phase phase) {
    phase_ = phase;
    const bool live = isLivePhase(phase);
    updateStartButton();
    batch_panel_->setRunLive(live);
    configure_view_->setLocked(live);
    const bool can_pause = phase == Phase::Running || phase == Phase::Pausing || phase == Phase::Paused;
    const bool resumes = phase == Phase::Pausing || phase == Phase::Paused;
    pause_button_->setEnabled(can_pause);
    pause_button_->setText(resumes ? tr("Resume") : tr("Pause"));
    pause_action_->setEnabled(can_pause);
    pause_action_->setText(resumes ? tr("&Resume") : tr("&Pause"));
    stop_button_->setEnabled(live && phase != Phase::Stopping);
    stop_action_->setEnabled(live && phase != Phase::Stopping);
}

void MainWindow::updateStartButton() {
    const bool exploring = batch_panel_->isExploring();
    // A config the engine would refuse for its memory cannot start: say why instead.
    const QString& refusal = batch_panel_->startRefusal();
    start_button_->setEnabled(!isLivePhase(phase_) && !exploring && refusal.isEmpty());
    // Start never acts on the watched run: it trains the window's own config instead.
    start_button_->setText(watch_tail_ ? tr("Start own run") : tr("Start"));
    start_action_->setEnabled(start_button_->isEnabled());
    if (exploring)
        start_button_->setToolTip(tr("The batch explorer is measuring (Batch & memory tab)."));
    else if (!refusal.isEmpty())
        start_button_->setToolTip(tr("Does not fit (Batch & memory tab): %1").arg(refusal));
    else if (watch_tail_)
        start_button_->setToolTip(
            tr("Trains the config at the left in this window; stops watching run %1.").arg(watch_tail_->runId()));
    else
        start_button_->setToolTip(QString());
}

void MainWindow::showReadyStatus() {
    if (batch_panel_->startRefusal().isEmpty())
        setStatusText(tr("Ready: press Start to train %1 steps.").arg(plannedSteps(config_)));
    else
        setStatusText(tr("Does not fit this machine: see Batch & memory for what it needs."), /*error=*/true);
}

void MainWindow::setStatusText(const QString& text, bool error) {
    status_label_->setText(text);
    status_label_->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
}

void MainWindow::appendLog(const QString& line) {
    event_log_->appendPlainText(line);
}

bool MainWindow::isRankPeakKey(const std::string& key) {
    const auto parsed = metric::parseMemoryKey(key);
    return parsed && parsed->what == metric::kPeakBytes;
}

std::vector<std::pair<QString, int64_t>> MainWindow::rankPeaks() const {
    // "mem/cpu10/peak_bytes" after "mem/cpu9/...": ranks in number order, not text order.
    std::vector<std::pair<QString, int64_t>> out;
    for (auto it = rank_peaks_.begin(); it != rank_peaks_.end(); ++it)
        out.emplace_back(it.key().section(QLatin1Char('/'), 1, 1), static_cast<int64_t>(it.value()));
    auto number = [](const QString& device) {
        qsizetype digits = device.size();
        while (digits > 0 && device[digits - 1].isDigit()) --digits;
        return std::pair{device.left(digits), device.mid(digits).toInt()};
    };
    std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return number(a.first) < number(b.first); });
    return out;
}

void MainWindow::onPoints(const QVector<MetricPoint>& points) {
    monitor_->addPoints(points);

    // Only the newest value of each key matters for the labels: one pass, then one update.
    const MetricPoint* loss = nullptr;
    const MetricPoint* lr = nullptr;
    const MetricPoint* throughput = nullptr;
    const MetricPoint* collectives = nullptr;
    const MetricPoint* critical = nullptr;
    const MetricPoint* critical_error = nullptr;
    double wall_time = -1.0;
    for (const MetricPoint& point : points) {
        if (point.key == metric::kLoss) loss = &point;
        else if (point.key == metric::kLearningRate) lr = &point;
        else if (point.key == metric::kTokensPerSecond) throughput = &point;
        else if (point.key == metric::kCollectives) collectives = &point;
        else if (isRankPeakKey(point.key)) rank_peaks_[QString::fromStdString(point.key)] = point.value;
        else if (point.key == metric::kCriticalBatchSequences) critical = &point;
        else if (point.key == metric::kCriticalBatchRelativeError) critical_error = &point;
        wall_time = std::max(wall_time, point.wall_time);
        latest_step_ = std::max(latest_step_, point.step);
    }
    // With train.log_every > 1 points are sparse; the session's counter keeps the bar exact.
    // A watched run has no session here: its points are all there is.
    if (!watch_tail_) latest_step_ = std::max(latest_step_, bridge_->completedSteps());
    if (loss) {
        latest_loss_ = loss->value;
        have_loss_ = true;
        const QCPGraph* smoothed = plots_->lossSmoothedGraph();
        const double ema = smoothed->dataCount() > 0 ? (smoothed->data()->constEnd() - 1)->value : qQNaN();
        loss_value_label_->setText(tr("%1  (EMA %2)").arg(formatLoss(loss->value), formatLoss(ema)));
    }
    if (lr) lr_value_label_->setText(QString::number(lr->value, 'g', 3));
    if (throughput) throughput_value_label_->setText(formatGrouped(std::llround(throughput->value)));
    if (collectives) collectives_value_label_->setText(QString::number(std::llround(collectives->value)));
    if (!rank_peaks_.empty()) rank_peaks_value_label_->setText(formatRankPeaks(rankPeaks()));
    if (critical)
        batch_panel_->setCriticalBatch(critical->value,
                                       critical_error && critical_error->step == critical->step ? critical_error->value
                                                                                               : qQNaN(),
                                       critical->step);
    if (wall_time >= 0.0) elapsed_value_label_->setText(formatSeconds(wall_time));

    progress_bar_->setValue(static_cast<int>(std::min<int64_t>(latest_step_, progress_bar_->maximum())));
    if (watch_tail_) {
        if (watch_tail_->isPolling()) setStatusText(watchingStatusText());
    } else if (phase_ == Phase::Running) {
        setStatusText(tr("Running · step %1 of %2").arg(latest_step_).arg(plannedStepsText(config_)));
    }
}

void MainWindow::onEvent(const RunEvent& event) {
    monitor_->addEvent(event);
    // A held run says so where the user looks first; the log keeps the details.
    if (event.kind == eventKindName(EventKind::StoreUnwritable))
        setStatusText(tr("Held at step %1: the run store cannot be written (disk full or read-only); no point is lost.")
                          .arg(event.step),
                      true);
    else if (event.kind == eventKindName(EventKind::StoreWritable))
        setStatusText(tr("Running: the run store accepts writes again."));
    else if (event.kind == eventKindName(EventKind::Checkpoint))
        batch_panel_->setLatestCheckpoint(QString::fromStdString(event.message), event.step);
    appendLog(QStringLiteral("[step %1] %2: %3")
                  .arg(event.step)
                  .arg(QString::fromStdString(event.kind), QString::fromStdString(event.message)));
}

void MainWindow::onStatus(const QString& status) {
    if (status == QLatin1String("paused") && (phase_ == Phase::Pausing || phase_ == Phase::Running)) {
        setPhase(Phase::Paused);
        setStatusText(tr("Paused at step %1 of %2: press Resume to continue.")
                          .arg(latest_step_)
                          .arg(plannedSteps(config_)));
    } else if (status == QLatin1String("running") && phase_ == Phase::Running) {
        setStatusText(tr("Running · step %1 of %2").arg(latest_step_).arg(plannedStepsText(config_)));
    }
}

void MainWindow::onFinished(const RunSummary& summary) {
    setPhase(Phase::Finished);
    const QString name = QString::fromLatin1(runStatusName(summary.status));
    const int64_t steps = std::max(summary.steps, latest_step_);
    // An adaptive batch ends in fewer steps than planned at its first batch: a completed run is full.
    if (summary.status == RunStatus::Completed && steps > 0 && steps < progress_bar_->maximum())
        progress_bar_->setMaximum(static_cast<int>(steps));
    progress_bar_->setValue(static_cast<int>(std::min<int64_t>(steps, progress_bar_->maximum())));
    const double final_loss = std::isfinite(summary.final_loss) ? summary.final_loss : latest_loss_;
    const QString loss_text = have_loss_ || std::isfinite(summary.final_loss)
                                  ? tr(" · final loss %1").arg(formatLoss(final_loss))
                                  : QString();
    switch (summary.status) {
    case RunStatus::Completed:
        setStatusText(tr("Completed · %1 steps in %2%3")
                          .arg(steps)
                          .arg(formatSeconds(summary.wall_time_s), loss_text));
        break;
    case RunStatus::Failed:
        setStatusText(tr("Failed at step %1: %2")
                          .arg(steps)
                          .arg(QString::fromStdString(summary.error)),
                      /*error=*/true);
        break;
    default:
        setStatusText(tr("%1 at step %2 of %3%4")
                          .arg(capitalized(name))
                          .arg(steps)
                          .arg(plannedSteps(config_))
                          .arg(loss_text));
        break;
    }
    appendLog(tr("%1 after %2 steps").arg(name).arg(steps));
    flushView();

    if (queue_row_ >= 0) {
        queue_view_->queue()->markFinished(queue_row_, summary);
        queue_row_ = -1;
        if (summary.status == RunStatus::Stopped && queue_running_) {
            // The user stopped the queue's run: the rest waits for them.
            setQueueRunning(false);
            appendLog(tr("queue paused: its run was stopped"));
        }
    }
    // A queue started during a run (its own or the user's) goes on once it has ended; after
    // this slot returns, so the next start does not nest inside the bridge's signal.
    if (queue_running_) QTimer::singleShot(0, this, &MainWindow::runNextQueued);
}

void MainWindow::onStartFailed(const QString& message) {
    setPhase(phase_ == Phase::Finished ? Phase::Finished : Phase::Idle);
    setStatusText(tr("Could not start: %1").arg(message), /*error=*/true);
    appendLog(tr("could not start: %1").arg(message));
}

void MainWindow::startQueue() {
    if (queue_view_->queue()->nextWaiting() < 0) return;
    setQueueRunning(true);
    if (bridge_->isLive()) {
        appendLog(tr("queue: starts when the current run ends"));
        return;
    }
    runNextQueued();
}

void MainWindow::stopQueue() {
    setQueueRunning(false);
    if (queue_row_ >= 0) appendLog(tr("queue: no run starts after this one"));
}

void MainWindow::setQueueRunning(bool running) {
    queue_running_ = running;
    queue_view_->setQueueRunning(running);
}

void MainWindow::runNextQueued() {
    if (!queue_running_ || bridge_->isLive()) return;
    RunQueue* queue = queue_view_->queue();
    const int row = queue->nextWaiting();
    if (row < 0) {
        setQueueRunning(false);
        appendLog(tr("queue: every run has ended"));
        return;
    }
    if (batch_panel_->isExploring() || batch_panel_->isMeasuring()) {
        setQueueRunning(false);
        setStatusText(tr("Queue paused: the batch explorer is measuring; start the queue again when it ends."),
                      /*error=*/true);
        return;
    }
    const RunQueue::Job job = queue->job(row);
    // The job's config becomes the window's, so the numbers beside the plots are the run's.
    // Queued runs keep the tab the user is on; the Training tab shows each live.
    QWidget* shown_tab = tabs_->currentWidget();
    setRunConfig(job.config, job.name);
    queue_row_ = row;
    const bool started = startRun();
    tabs_->setCurrentWidget(shown_tab);
    if (started) {
        queue->markStarted(row, bridge_->runId());
        return;
    }
    queue->markRefused(row, status_label_->text());
    queue_row_ = -1;
    QTimer::singleShot(0, this, &MainWindow::runNextQueued);
}


bool MainWindow::watchRun(const QString& run_id) {
    if (bridge_->isLive()) {
        setStatusText(tr("Cannot watch run %1 while this window's run is live: stop it first.").arg(run_id),
                      /*error=*/true);
        return false;
    }
    stopWatching();
    watch_tail_ = new StoreTail(runs_panel_->model()->storeFolder(), run_id, this);
    connect(watch_tail_, &StoreTail::runFound, this, &MainWindow::onWatchedRunFound);
    // The same handlers as the window's own run, so plots, markers and labels behave alike.
    connect(watch_tail_, &StoreTail::pointsArrived, this, &MainWindow::onPoints);
    connect(watch_tail_, &StoreTail::eventArrived, this, &MainWindow::onEvent);
    connect(watch_tail_, &StoreTail::runFinished, this, &MainWindow::onWatchedRunFinished);
    connect(watch_tail_, &StoreTail::failed, this, [this](const QString& message) {
        setStatusText(tr("Watching run %1: %2").arg(watch_tail_->runId(), message), /*error=*/true);
        appendLog(message);
    });
    watched_config_known_ = false;
    updateStartButton();
    setStatusText(tr("Watching run %1 (written by another process): reading the store…").arg(run_id));
    showTab(Tab::Training);
    watch_tail_->start();
    return true;
}

void MainWindow::stopWatching() {
    if (!watch_tail_) return;
    watch_tail_->stop();
    // Later: this may run inside one of the tail's own signals.
    watch_tail_->deleteLater();
    watch_tail_ = nullptr;
    watched_config_known_ = false;
    updateStartButton();
    showConfigNumbers();
}

QString MainWindow::watchedRunId() const {
    return watch_tail_ ? watch_tail_->runId() : QString();
}

int64_t MainWindow::shownRunSteps() const {
    return watch_tail_ ? watched_steps_ : plannedSteps(config_);
}

QString MainWindow::watchingStatusText() const {
    return tr("Watching run %1 (written by another process) · step %2 of %3")
        .arg(watch_tail_->runId())
        .arg(latest_step_)
        .arg(shownRunSteps());
}

void MainWindow::onWatchedRunFound(const RunRecord& record) {
    // The run's own config sets the plots' scales (steps, the LR schedule, MoE layers); one
    // that no longer parses (an older config format) falls back to the window's.
    RunConfig config = config_;
    try {
        config = parseRunConfig(record.config_json, "run " + record.run_id);
        watched_config_ = config;
        watched_config_known_ = true;
    } catch (const std::exception& error) {
        appendLog(tr("the config of run %1 does not parse (%2); the plots use the window's")
                      .arg(QString::fromStdString(record.run_id), QString::fromStdString(error.what())));
    }
    showConfigNumbers();
    watched_steps_ = std::max<int64_t>(plannedSteps(config), 1);
    latest_step_ = 0;
    latest_loss_ = 0;
    have_loss_ = false;
    monitor_->resetRun(config);
    progress_bar_->setRange(0, static_cast<int>(watched_steps_));
    progress_bar_->setValue(0);
    for (QLabel* label : {loss_value_label_, lr_value_label_, throughput_value_label_, elapsed_value_label_,
                          collectives_value_label_, rank_peaks_value_label_})
        label->clear();
    rank_peaks_.clear();
    batch_panel_->setCriticalBatch(0, 0, 0);
    batch_panel_->setLatestCheckpoint(QString(), 0);  // a new run: the last one's checkpoint is not its
    event_log_->clear();
    const QString name = QString::fromStdString(record.name.empty() ? record.run_id : record.name);
    appendLog(tr("watching run %1 (%2, %3), written by another process")
                  .arg(QString::fromStdString(record.run_id), name, QString::fromStdString(record.status)));
    setStatusText(watchingStatusText());
}

void MainWindow::onWatchedRunFinished(const RunRecord& record) {
    const QString id = QString::fromStdString(record.run_id);
    const QString status = QString::fromStdString(record.status);
    const int64_t steps = std::max(record.steps, latest_step_);
    progress_bar_->setValue(static_cast<int>(std::min<int64_t>(steps, progress_bar_->maximum())));
    const bool has_loss = record.final_loss && std::isfinite(*record.final_loss);
    const QString loss_text = has_loss ? tr(" · final loss %1").arg(formatLoss(*record.final_loss))
                              : have_loss_ ? tr(" · final loss %1").arg(formatLoss(latest_loss_))
                                           : QString();
    if (record.status == "failed")
        setStatusText(tr("Run %1 (written by another process) failed at step %2: %3")
                          .arg(id)
                          .arg(steps)
                          .arg(QString::fromStdString(record.error)),
                      /*error=*/true);
    else
        setStatusText(tr("Run %1 (written by another process) %2 · %3 of %4 steps%5")
                          .arg(id, status)
                          .arg(steps)
                          .arg(shownRunSteps())
                          .arg(loss_text));
    appendLog(tr("%1 after %2 steps").arg(status).arg(steps));
    flushView();
}

}  // namespace trainbench::gui
