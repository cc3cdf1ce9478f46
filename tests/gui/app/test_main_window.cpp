// Tests the workbench window end to end on a tiny model: config numbers, controls, live loss curve.
#include <cmath>
#include <memory>

#include <QAction>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSplitter>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "widget_lookup.h"
#include "common/display_format.h"
#include "configure/configure_view.h"
#include "runs/engine_bridge.h"
#include "app/layout_settings.h"
#include "app/main_window.h"
#include "tiny_gui_config.h"
#include "monitor/monitor_view.h"
#include "monitor/metric_plots.h"
#include "trainbench/param_count.h"
#include "trainbench/run_config.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// Generous: the engine may still be building its first batch on a loaded two-core machine.
constexpr int kRunTimeoutMs = 180000;

RunConfig tinyConfig(int64_t steps = 30) { return tinyGuiConfig(steps); }

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void showsConfigNumbers();
    void idleControls();
    void replotsAreCoalesced();
    void aLongRunIsDrawnThroughItsPyramid();
    void startStreamsLossAndStopEndsRun();
    void pauseAndResume();
    void invalidConfigIsReportedNotStarted();
    void closingMidRunStopsTheRun();
    void menusCarryTheRunControls();
    void layoutIsRememberedAcrossSessions();
    void aShardedRunShowsEachRanksPeakAndItsCollectives();
    void anOffloadedRunShowsItsFilesTraffic();
};

void TestMainWindow::initTestCase() {
    // Nothing here may touch the user's settings.
    QStandardPaths::setTestModeEnabled(true);
}

void TestMainWindow::showsConfigNumbers() {
    const RunConfig config = tinyConfig();
    MainWindow window(config, QStringLiteral("tiny-test.json"));

    QCOMPARE(child<QLabel>(window, "configNameLabel")->text(), QStringLiteral("tiny-test.json"));
    // m 2 × K 1 × W 1 = 2 sequences of 16 tokens.
    QCOMPARE(child<QLabel>(window, "batchLabel")->text(), QStringLiteral("m 2 × K 1 × W 1 = B 2 sequences"));
    QVERIFY(child<QLabel>(window, "tokensPerStepLabel")->text().startsWith(QStringLiteral("32 ")));
    QCOMPARE(child<QLabel>(window, "seqLenLabel")->text(), QStringLiteral("16"));
    QCOMPARE(child<QLabel>(window, "stepsLabel")->text(), QStringLiteral("30"));
    const ParamCount params = countParameters(config.model);
    QCOMPARE(child<QLabel>(window, "totalParamsLabel")->text(), formatCount(params.total));
    QVERIFY(child<QLabel>(window, "activatedParamsLabel")->text().startsWith(formatCount(params.activated)));
    QCOMPARE(child<QProgressBar>(window, "progressBar")->maximum(), 30);
}

void TestMainWindow::idleControls() {
    MainWindow window(tinyConfig(), QStringLiteral("tiny"));
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());
    QVERIFY(!child<QPushButton>(window, "pauseButton")->isEnabled());
    QVERIFY(!child<QPushButton>(window, "stopButton")->isEnabled());
}

void TestMainWindow::replotsAreCoalesced() {
    MetricPlots plots;
    plots.resize(800, 500);
    plots.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    plots.resetRun(tinyConfig(500));
    plots.flushReplot();

    QSignalSpy replots(&plots, &QCustomPlot::afterReplot);
    for (int step = 1; step <= 500; ++step) {
        MetricPoint point;
        point.step = step;
        point.key = "train/loss";
        point.value = 5.0 / std::sqrt(static_cast<double>(step));
        plots.addPoints({point});
    }
    // 500 batches within one event-loop turn: nothing drawn yet, one redraw armed.
    QCOMPARE(replots.count(), 0);
    QVERIFY(plots.replotPending());
    QTRY_COMPARE(replots.count(), 1);
    QVERIFY(!plots.replotPending());
    QCOMPARE(plots.lossRawGraph()->dataCount(), 500);
    QCOMPARE(plots.lossSmoothedGraph()->dataCount(), 500);
    QVERIFY(plots.replotIntervalMs() >= MetricPlots::kReplotIntervalMs);

    // The next redraw waits three times as long as the last one took, from 33 ms to 1 s.
    QCOMPARE(MetricPlots::replotIntervalAfter(0.0), 33);
    QCOMPARE(MetricPlots::replotIntervalAfter(5.0), 33);
    QCOMPARE(MetricPlots::replotIntervalAfter(11.5), 35);
    QCOMPARE(MetricPlots::replotIntervalAfter(140.0), 420);
    QCOMPARE(MetricPlots::replotIntervalAfter(2000.0), 1000);
}

// 200,000 steps: while the plots draw, the loss graph holds the pyramid's view (far fewer
// points, its extremes kept, a late point inside the curve included); before and after, all.
void TestMainWindow::aLongRunIsDrawnThroughItsPyramid() {
    MetricPlots plots;
    plots.resize(1000, 700);
    plots.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    plots.resetRun(tinyConfig(200'000));
    QVector<MetricPoint> points;
    for (int64_t step = 1; step <= 200'000; ++step) {
        MetricPoint point;
        point.step = step;
        point.key = "train/loss";
        point.value = 3.0 + 0.1 * std::sin(double(step)) + (step == 123'457 ? 5.0 : 0.0);
        points.push_back(point);
    }
    plots.addPoints(points);
    int drawn = -1;
    double drawn_high = 0;
    connect(&plots, &QCustomPlot::afterLayout, &plots, [&] {
        drawn = plots.lossRawGraph()->dataCount();
        drawn_high = -1e300;
        for (auto it = plots.lossRawGraph()->data()->constBegin(); it != plots.lossRawGraph()->data()->constEnd(); ++it)
            drawn_high = std::max(drawn_high, it->value);
    });
    plots.flushReplot();
    QVERIFY2(drawn > 0 && drawn < 20'000, qPrintable(QString::number(drawn)));
    QCOMPARE(drawn_high, 8.0 + 0.1 * std::sin(123'457.0));
    QCOMPARE(plots.lossRawGraph()->dataCount(), 200'000);
    // A second sample of an early step (a late point) lands inside the curve, and is drawn.
    MetricPoint late;
    late.step = 50'000;
    late.key = "train/loss";
    late.value = 42.0;
    plots.addPoints({late});
    plots.flushReplot();
    QCOMPARE(drawn_high, 42.0);
    QCOMPARE(plots.lossRawGraph()->dataCount(), 200'001);
}

void TestMainWindow::startStreamsLossAndStopEndsRun() {
    MainWindow window(tinyConfig(30), QStringLiteral("tiny"));
    window.resize(1280, 800);
    window.show();
    auto* start = child<QPushButton>(window, "startButton");
    auto* pause = child<QPushButton>(window, "pauseButton");
    auto* stop = child<QPushButton>(window, "stopButton");
    auto* status = child<QLabel>(window, "statusLabel");
    auto* plots = child<MetricPlots>(window, "metricPlots");
    QVERIFY(start && pause && stop && status && plots);

    QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY2(window.bridge()->isLive(), qPrintable(status->text()));
    QVERIFY(!start->isEnabled());
    QVERIFY(pause->isEnabled() || finished.count() == 1);
    // A CPU run has every core busy: the window takes its points 4 times a second, not 30.
    QCOMPARE(window.bridge()->drainIntervalMs(), EngineBridge::kCpuRunDrainIntervalMs);

    const QCPGraph* raw = plots->lossRawGraph();
    QTRY_VERIFY_WITH_TIMEOUT(raw->dataCount() >= 3, kRunTimeoutMs);
    QTest::mouseClick(stop, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);

    const QString text = status->text().toLower();
    QVERIFY2(text.contains(QStringLiteral("stopped")) || text.contains(QStringLiteral("completed")),
             qPrintable(status->text()));
    QVERIFY(start->isEnabled());
    QVERIFY(!pause->isEnabled());
    QVERIFY(!stop->isEnabled());
    QVERIFY(!window.bridge()->isLive());

    // One point per optimizer step, in order from 1, all finite; the smoothed curve shares x.
    const QCPGraph* smoothed = plots->lossSmoothedGraph();
    QVERIFY(raw->dataCount() >= 3);
    QVERIFY(raw->dataCount() <= 30);
    QCOMPARE(smoothed->dataCount(), raw->dataCount());
    for (int i = 0; i < raw->dataCount(); ++i) {
        const auto point = raw->data()->at(i);
        QCOMPARE(point->key, static_cast<double>(i + 1));
        QVERIFY2(std::isfinite(point->value), qPrintable(QString::number(point->value)));
        QCOMPARE(smoothed->data()->at(i)->key, point->key);
        QVERIFY(std::isfinite(smoothed->data()->at(i)->value));
    }
    // A fresh model on a 32-token vocabulary starts near ln 32 = 3.47 nats.
    QVERIFY2(raw->data()->at(0)->value > 1.0 && raw->data()->at(0)->value < 10.0,
             qPrintable(QString::number(raw->data()->at(0)->value)));
    const RunSummary summary = finished.takeFirst().at(0).value<RunSummary>();
    QCOMPARE(summary.steps, static_cast<int64_t>(raw->dataCount()));
    QCOMPARE(child<QProgressBar>(window, "progressBar")->value(), raw->dataCount());
    // One rank: the window's statistics are the step's only collective.
    QCOMPARE(child<QLabel>(window, "collectivesValueLabel")->text(), QStringLiteral("1"));
}

void TestMainWindow::pauseAndResume() {
    // Long enough that the run cannot end before the pause takes effect.
    MainWindow window(tinyConfig(100000), QStringLiteral("tiny"));
    window.show();
    auto* start = child<QPushButton>(window, "startButton");
    auto* pause = child<QPushButton>(window, "pauseButton");
    auto* stop = child<QPushButton>(window, "stopButton");
    auto* status = child<QLabel>(window, "statusLabel");
    QSignalSpy statuses(window.bridge(), &EngineBridge::statusChanged);
    QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);

    QTest::mouseClick(start, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(window.plots()->lossRawGraph()->dataCount() >= 1, kRunTimeoutMs);
    // The config being trained cannot change under the run.
    QVERIFY(window.configureView()->isLocked());
    QVERIFY(!window.setRunConfig(tinyConfig(7), QStringLiteral("other")));
    QCOMPARE(window.runConfig().train.steps, 100000);
    QTest::mouseClick(pause, Qt::LeftButton);
    QCOMPARE(pause->text(), QStringLiteral("Resume"));
    QTRY_VERIFY_WITH_TIMEOUT(status->text().startsWith(QStringLiteral("Paused")), kRunTimeoutMs);
    QCOMPARE(window.bridge()->status(), RunStatus::Paused);
    QVERIFY(!start->isEnabled());
    QVERIFY(pause->isEnabled());
    QVERIFY(stop->isEnabled());

    QTest::mouseClick(pause, Qt::LeftButton);
    QCOMPARE(pause->text(), QStringLiteral("Pause"));
    QTRY_COMPARE_WITH_TIMEOUT(window.bridge()->status(), RunStatus::Running, kRunTimeoutMs);

    QTest::mouseClick(stop, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QVERIFY2(status->text().startsWith(QStringLiteral("Stopped")), qPrintable(status->text()));
    QVERIFY(start->isEnabled());
    QVERIFY(!window.configureView()->isLocked());
    bool saw_paused = false;
    for (const QList<QVariant>& args : statuses) saw_paused |= args.at(0).toString() == QLatin1String("paused");
    QVERIFY(saw_paused);
}

void TestMainWindow::invalidConfigIsReportedNotStarted() {
    RunConfig config = tinyConfig();
    config.train.micro_batch_size = 0;
    MainWindow window(config, QStringLiteral("broken"));
    QSignalSpy failed(window.bridge(), &EngineBridge::startFailed);

    QTest::mouseClick(child<QPushButton>(window, "startButton"), Qt::LeftButton);
    QCOMPARE(failed.count(), 1);
    QVERIFY(!window.bridge()->isLive());
    const QString status = child<QLabel>(window, "statusLabel")->text();
    QVERIFY2(status.contains(QStringLiteral("micro_batch_size")), qPrintable(status));
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());
    QVERIFY(!child<QPushButton>(window, "stopButton")->isEnabled());
}

void TestMainWindow::closingMidRunStopsTheRun() {
    auto window = std::make_unique<MainWindow>(tinyConfig(100000), QStringLiteral("tiny"));
    window->show();
    QVERIFY(window->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(window->plots()->lossRawGraph()->dataCount() >= 1, kRunTimeoutMs);
    // close() asks the ranks to stop; the destructor then joins them, within a micro-batch.
    QVERIFY(window->close());
    window.reset();
}

void TestMainWindow::menusCarryTheRunControls() {
    MainWindow window(tinyConfig(), QStringLiteral("tiny"));
    auto action = [&](const char* name) { return window.findChild<QAction*>(QString::fromLatin1(name)); };
    QVERIFY(action("startAction") && action("pauseAction") && action("stopAction"));
    QCOMPARE(action("startAction")->shortcut(), QKeySequence(QStringLiteral("Ctrl+R")));
    QCOMPARE(action("pauseAction")->shortcut(), QKeySequence(QStringLiteral("Ctrl+Shift+P")));
    QCOMPARE(action("stopAction")->shortcut(), QKeySequence(QStringLiteral("Ctrl+.")));
    QCOMPARE(action("openConfigAction")->shortcut(), QKeySequence(QStringLiteral("Ctrl+O")));
    QCOMPARE(action("saveConfigAction")->shortcut(), QKeySequence(QStringLiteral("Ctrl+S")));
    // Idle: the actions say what the buttons say.
    QVERIFY(action("startAction")->isEnabled());
    QVERIFY(!action("pauseAction")->isEnabled());
    QVERIFY(!action("stopAction")->isEnabled());
    // Every shortcut of the window is distinct.
    QList<QKeySequence> seen;
    for (QAction* each : window.findChildren<QAction*>()) {
        if (each->shortcut().isEmpty()) continue;
        QVERIFY2(!seen.contains(each->shortcut()), qPrintable(each->shortcut().toString()));
        seen << each->shortcut();
    }
}

void TestMainWindow::layoutIsRememberedAcrossSessions() {
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    const QString file = folder.filePath(QStringLiteral("layout.ini"));
    qputenv("TRAINBENCH_SETTINGS", file.toLocal8Bit());
    QCOMPARE(openLayoutSettings()->fileName(), file);

    QList<int> main_sizes;
    QList<int> configure_sizes;
    {
        MainWindow window(tinyConfig(), QStringLiteral("tiny"));
        window.resize(1280, 800);
        QVERIFY(!window.rememberLayout());  // nothing remembered yet: the window opens as built
        QCOMPARE(child<QTabWidget>(window, "mainTabs")->currentWidget(), static_cast<QWidget*>(window.monitorView()));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.showTab(MainWindow::Tab::Configure);
        auto* main_splitter = child<QSplitter>(window, "mainSplitter");
        auto* configure_splitter = child<QSplitter>(window, "configureSplitter");
        main_splitter->setSizes({400, 880});
        configure_splitter->setSizes({500, 340});
        main_sizes = main_splitter->sizes();
        configure_sizes = configure_splitter->sizes();
        QVERIFY(window.close());
    }
    QVERIFY(QFileInfo::exists(file));

    MainWindow window(tinyConfig(), QStringLiteral("tiny"));
    window.resize(1280, 800);
    QVERIFY(window.rememberLayout());
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCOMPARE(child<QTabWidget>(window, "mainTabs")->currentWidget(), window.configureView());
    QCOMPARE(child<QSplitter>(window, "mainSplitter")->sizes(), main_sizes);
    QCOMPARE(child<QSplitter>(window, "configureSplitter")->sizes(), configure_sizes);
    qunsetenv("TRAINBENCH_SETTINGS");
}


// Two rank threads at ZeRO stage 3: the side panel lists each rank's peak (not rank 0's alone)
// and the step's collectives, K x (3 x units - 1) + 2 of them (the table of docs/design/layouts.md section 7: an
// all-gather per unit before its forward, one more before its backward but the embedding's, a
// reduce-scatter per unit; the statistics and the norm).
void TestMainWindow::aShardedRunShowsEachRanksPeakAndItsCollectives() {
    RunConfig config = tinyConfig(4);
    config.runtime.world_size = 2;
    config.runtime.zero_stage = 3;
    config.train.micro_batch_size = 1;
    config.train.gradient_accumulation_steps = 1;
    MainWindow window(config, QStringLiteral("tiny"));
    window.show();
    QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
    QTest::mouseClick(child<QPushButton>(window, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, kRunTimeoutMs);
    QCoreApplication::processEvents();
    const QStringList lines = child<QLabel>(window, "rankPeaksValueLabel")->text().split(QStringLiteral(" · "));
    QCOMPARE(lines.size(), 2);
    QVERIFY2(lines[0].startsWith(QStringLiteral("cpu0 ")) && lines[1].startsWith(QStringLiteral("cpu1 ")),
             qPrintable(lines.join(QStringLiteral(" | "))));
    const int64_t units = config.model.n_layers + 2;
    QCOMPARE(child<QLabel>(window, "collectivesValueLabel")->text(), QString::number(3 * units - 1 + 2));
    // No offload files: no I/O row.
    QVERIFY(!child<QLabel>(window, "offloadIoValueLabel")->isVisible());
}

// Offload all with offload_dir: the side panel shows the files' read and write rates of the last
// step (io/read_gbps, io/write_gbps) once the run reports them.
void TestMainWindow::anOffloadedRunShowsItsFilesTraffic() {
    QTemporaryDir scratch(QDir::currentPath() + QStringLiteral("/offload-XXXXXX"));
    QVERIFY(scratch.isValid());
    RunConfig config = tinyConfig(3);
    config.runtime.zero_stage = 3;
    config.runtime.offload = "all";
    config.runtime.offload_dir = scratch.path().toStdString();
    MainWindow window(config, QStringLiteral("tiny"));
    window.show();
    QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
    QTest::mouseClick(child<QPushButton>(window, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, kRunTimeoutMs);
    QCoreApplication::processEvents();
    auto* io = child<QLabel>(window, "offloadIoValueLabel");
    QVERIFY(io->isVisible());
    QVERIFY2(io->text().startsWith(QStringLiteral("read ")) && io->text().contains(QStringLiteral(" GB/s · write ")),
             qPrintable(io->text()));
}

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
