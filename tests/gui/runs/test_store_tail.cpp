// Tests watching a run that another writer commits to the store: the Training tab grows with it and stops when it ends.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <QAction>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include "widget_lookup.h"
#include "runs/engine_bridge.h"
#include "app/main_window.h"
#include "tiny_gui_config.h"
#include "monitor/metric_plots.h"
#include "runs/runs_model.h"
#include "runs/runs_panel.h"
#include "runs/store_tail.h"
#include "trainbench/config_io.h"
#include "trainbench/run_config.h"
#include "trainbench/run_store.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// Generous: the engine may still be building its first batch on a loaded two-core machine.
constexpr int kRunTimeoutMs = 180000;
// Enough for a few polls on a loaded machine.
constexpr int kPollTimeoutMs = 20000;

RunConfig tinyConfig(int64_t steps) { return tinyGuiConfig(steps); }

constexpr int64_t kTokensPerStep = 32;

double lossAt(int64_t step) { return 5.0 / std::sqrt(static_cast<double>(step)); }

// What a headless run's writer commits per step: loss, cumulative tokens, learning rate.
std::vector<MetricPoint> stepPoints(int64_t first, int64_t last) {
    std::vector<MetricPoint> points;
    for (int64_t step = first; step <= last; ++step) {
        for (const char* key : {"train/loss", "train/tokens", "train/lr"}) {
            MetricPoint point;
            point.step = step;
            point.tokens = step * kTokensPerStep;
            point.wall_time = 0.1 * static_cast<double>(step);
            point.key = key;
            point.value = point.key == "train/loss"     ? lossAt(step)
                          : point.key == "train/tokens" ? static_cast<double>(point.tokens)
                                                        : 3e-4;
            points.push_back(point);
        }
    }
    return points;
}

}  // namespace

class TestStoreTail : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void watchedRunGrowsThenEnds();
    void finishedRunLoadsInOneRead();
    void unknownRunIsReported();
    void runsListWatchActionWatches();
    void startingOwnRunStopsWatching();
    void resumedStepsAreNotDeliveredTwice();

private:
    // Registers a run as a headless writer would: `running`, with its config.
    void createRun(const std::string& run_id, int64_t steps);

    std::unique_ptr<QTemporaryDir> store_folder_;
    // The writer: the test thread stands in for the other process.
    std::unique_ptr<RunStore> writer_;
};

void TestStoreTail::initTestCase() {
    // Nothing here may touch the user's settings.
    QStandardPaths::setTestModeEnabled(true);
    qRegisterMetaType<RunRecord>();
}

void TestStoreTail::init() {
    // A store of its own per test, never the user's: the window lists RunStore::defaultFolder().
    store_folder_ = std::make_unique<QTemporaryDir>();
    QVERIFY(store_folder_->isValid());
    qputenv("TRAINBENCH_STORE", store_folder_->path().toLocal8Bit());
    writer_ = std::make_unique<RunStore>(store_folder_->path().toStdString());
}

void TestStoreTail::cleanup() {
    writer_.reset();
    store_folder_.reset();
}

void TestStoreTail::createRun(const std::string& run_id, int64_t steps) {
    RunRecord run;
    run.run_id = run_id;
    run.name = "headless";
    run.config_json = runConfigToJson(tinyConfig(steps));
    writer_->createRun(run);
}

void TestStoreTail::watchedRunGrowsThenEnds() {
    const int64_t total_steps = 100;
    const int64_t first = 20;
    const int64_t more = 15;
    createRun("watched-run", total_steps);
    writer_->commitBatch("watched-run", stepPoints(1, first), {});

    MainWindow window(tinyConfig(30), QStringLiteral("tiny"));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.watchRun(QStringLiteral("watched-run")));
    QCOMPARE(window.watchedRunId(), QStringLiteral("watched-run"));
    StoreTail* tail = window.storeTail();
    QVERIFY(tail);
    MetricPlots* plots = window.plots();

    QTRY_COMPARE_WITH_TIMEOUT(plots->lossRawGraph()->dataCount(), static_cast<int>(first), kPollTimeoutMs);
    auto* status = child<QLabel>(window, "statusLabel");
    QVERIFY2(status->text().contains(QStringLiteral("Watching run watched-run (written by another process)")),
             qPrintable(status->text()));
    auto* progress = child<QProgressBar>(window, "progressBar");
    QCOMPARE(progress->maximum(), static_cast<int>(total_steps));
    QCOMPARE(progress->value(), static_cast<int>(first));
    QVERIFY(child<QLabel>(window, "lossValueLabel")->text().startsWith(QString::number(lossAt(first), 'f', 4)));
    // Pause and Stop belong to the window's own run, of which there is none.
    QVERIFY(!child<QPushButton>(window, "pauseButton")->isEnabled());
    QVERIFY(!child<QPushButton>(window, "stopButton")->isEnabled());
    QVERIFY(tail->isPolling());
    // The numbers beside the plots are the watched run's, not the window's 30 steps.
    QCOMPARE(child<QLabel>(window, "stepsLabel")->text(), QStringLiteral("100"));
    QVERIFY(child<QLabel>(window, "configNameLabel")->text().contains(QStringLiteral("watched-run")));

    writer_->commitBatch("watched-run", stepPoints(first + 1, first + more), {});
    QTRY_COMPARE_WITH_TIMEOUT(plots->lossRawGraph()->dataCount(), static_cast<int>(first + more), kPollTimeoutMs);
    // Each point once: a poll delivers only what the last one had not.
    QCOMPARE(plots->learningRateGraph()->dataCount(), static_cast<int>(first + more));
    QCOMPARE(progress->value(), static_cast<int>(first + more));

    RunEvent checkpoint;
    checkpoint.step = first + more;
    checkpoint.kind = "checkpoint";
    checkpoint.message = (store_folder_->path() + QStringLiteral("/checkpoints/watched-run/step-35")).toStdString();
    writer_->commitBatch("watched-run", {}, {checkpoint});
    auto hasCheckpointMarker = [plots] {
        for (const EventMarker& marker : plots->eventMarkers())
            if (marker.kind == QLatin1String("checkpoint") && marker.step == 35) return true;
        return false;
    };
    QTRY_VERIFY_WITH_TIMEOUT(hasCheckpointMarker(), kPollTimeoutMs);
    QVERIFY(child<QPlainTextEdit>(window, "eventLog")->toPlainText().contains(QStringLiteral("checkpoint")));

    QSignalSpy finished(tail, &StoreTail::runFinished);
    writer_->finishRun("watched-run", "completed", first + more, lossAt(first + more), "");
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kPollTimeoutMs);
    QVERIFY(!tail->isPolling());
    QVERIFY2(status->text().contains(QStringLiteral("completed")), qPrintable(status->text()));
    QVERIFY2(status->text().contains(QStringLiteral("watched-run")), qPrintable(status->text()));

    // Polling has stopped: points committed afterwards never arrive.
    const int reads = tail->readCount();
    writer_->commitBatch("watched-run", stepPoints(first + more + 1, first + more + 5), {});
    QTest::qWait(3 * StoreTail::kPollIntervalMs);
    QCOMPARE(tail->readCount(), reads);
    QCOMPARE(plots->lossRawGraph()->dataCount(), static_cast<int>(first + more));
}

void TestStoreTail::finishedRunLoadsInOneRead() {
    createRun("finished-run", 10);
    writer_->commitBatch("finished-run", stepPoints(1, 10), {});
    writer_->finishRun("finished-run", "completed", 10, lossAt(10), "");

    MainWindow window(tinyConfig(30), QStringLiteral("tiny"));
    QVERIFY(window.watchRun(QStringLiteral("finished-run")));
    StoreTail* tail = window.storeTail();
    QTRY_VERIFY_WITH_TIMEOUT(tail->isLoaded(), kPollTimeoutMs);
    QVERIFY(!tail->isPolling());
    QCOMPARE(tail->readCount(), 1);
    QCOMPARE(window.plots()->lossRawGraph()->dataCount(), 10);
    QCOMPARE(child<QProgressBar>(window, "progressBar")->value(), 10);
    const QString status = child<QLabel>(window, "statusLabel")->text();
    QVERIFY2(status.contains(QStringLiteral("completed")), qPrintable(status));
}

void TestStoreTail::unknownRunIsReported() {
    MainWindow window(tinyConfig(30), QStringLiteral("tiny"));
    QVERIFY(window.watchRun(QStringLiteral("no-such-run")));
    StoreTail* tail = window.storeTail();
    QSignalSpy failed(tail, &StoreTail::failed);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kPollTimeoutMs);
    QVERIFY(!tail->isPolling());
    QVERIFY(!tail->isLoaded());
    const QString status = child<QLabel>(window, "statusLabel")->text();
    QVERIFY2(status.contains(QStringLiteral("not in the store")), qPrintable(status));
}

void TestStoreTail::runsListWatchActionWatches() {
    createRun("listed-run", 10);
    writer_->commitBatch("listed-run", stepPoints(1, 4), {});

    MainWindow window(tinyConfig(30), QStringLiteral("tiny"));
    RunsPanel* panel = window.runsPanel();
    QTRY_VERIFY_WITH_TIMEOUT(panel->model()->rowOf(QStringLiteral("listed-run")) >= 0, kPollTimeoutMs);
    // A right-click makes the row under the pointer current; then the context menu's action.
    auto* view = child<QTableView>(*panel, "runsView");
    QModelIndex row;
    for (int i = 0; i < view->model()->rowCount(); ++i) {
        const QModelIndex index = view->model()->index(i, 0);
        if (index.data(RunsModel::RunIdRole).toString() == QLatin1String("listed-run")) row = index;
    }
    QVERIFY(row.isValid());
    view->setCurrentIndex(row);
    QVERIFY(view->actions().contains(panel->watchAction()));
    panel->watchAction()->trigger();
    QCOMPARE(window.watchedRunId(), QStringLiteral("listed-run"));
    QTRY_COMPARE_WITH_TIMEOUT(window.plots()->lossRawGraph()->dataCount(), 4, kPollTimeoutMs);
}

void TestStoreTail::startingOwnRunStopsWatching() {
    createRun("other-run", 100);
    writer_->commitBatch("other-run", stepPoints(1, 5), {});

    MainWindow window(tinyConfig(3), QStringLiteral("tiny"));
    QVERIFY(window.watchRun(QStringLiteral("other-run")));
    QTRY_COMPARE_WITH_TIMEOUT(window.plots()->lossRawGraph()->dataCount(), 5, kPollTimeoutMs);
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());
    QCOMPARE(child<QPushButton>(window, "startButton")->text(), QStringLiteral("Start own run"));

    QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
    QVERIFY(window.startRun());
    QVERIFY(window.watchedRunId().isEmpty());
    QVERIFY(!window.storeTail());
    QCOMPARE(child<QLabel>(window, "stepsLabel")->text(), QStringLiteral("3"));
    // While the own run is live the Training tab is its own.
    QVERIFY(!window.watchRun(QStringLiteral("other-run")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    // The own run's 3 steps, none of the watched run's 5 points.
    QCOMPARE(window.plots()->lossRawGraph()->dataCount(), 3);
}

void TestStoreTail::resumedStepsAreNotDeliveredTwice() {
    createRun("resumed-run", 20);
    writer_->commitBatch("resumed-run", stepPoints(1, 6), {});
    StoreTail tail(store_folder_->path(), QStringLiteral("resumed-run"));
    QVector<int64_t> loss_steps;
    connect(&tail, &StoreTail::pointsArrived, this, [&](const QVector<MetricPoint>& points) {
        for (const MetricPoint& point : points)
            if (point.key == "train/loss") loss_steps << point.step;
    });
    tail.start();
    QTRY_COMPARE_WITH_TIMEOUT(loss_steps.size(), 6, kPollTimeoutMs);

    // A resume from the checkpoint at step 3 re-commits steps 4 to 6, then goes on to 8.
    writer_->reopenRun("resumed-run", 3);
    writer_->commitBatch("resumed-run", stepPoints(4, 8), {});
    QTRY_COMPARE_WITH_TIMEOUT(loss_steps.size(), 8, kPollTimeoutMs);
    // A second sample at the newest step, with no rewind, is new.
    MetricPoint again = stepPoints(8, 8).front();
    writer_->commitBatch("resumed-run", {again}, {});
    QTRY_COMPARE_WITH_TIMEOUT(loss_steps.size(), 9, kPollTimeoutMs);
    QCOMPARE(loss_steps, (QVector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 8}));
    tail.stop();
}

QTEST_MAIN(TestStoreTail)
#include "test_store_tail.moc"
