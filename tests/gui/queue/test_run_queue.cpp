// Tests the run queue: the model, grids from the Queue tab, and queued runs training one after another.
#include <cmath>

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "compare/compare_view.h"
#include "runs/engine_bridge.h"
#include "app/main_window.h"
#include "queue/queue_view.h"
#include "queue/run_queue.h"
#include "tiny_gui_config.h"
#include "trainbench/config_io.h"
#include "trainbench/run_store.h"
#include "widget_lookup.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int kRunTimeoutMs = 180000;

RunSummary summaryOf(RunStatus status, double final_loss) {
    RunSummary summary;
    summary.status = status;
    summary.final_loss = final_loss;
    return summary;
}

QString cell(const RunQueue& queue, int row, RunQueue::Column column) {
    return queue.data(queue.index(row, column)).toString();
}

void selectField(QComboBox* combo, const QString& field) {
    const int index = combo->findData(field);
    QVERIFY2(index >= 0, qPrintable(field));
    combo->setCurrentIndex(index);
}

}  // namespace

class TestRunQueue : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void modelTracksJobsThroughTheirStates() {
        RunQueue queue;
        QAbstractItemModelTester tester(&queue, QAbstractItemModelTester::FailureReportingMode::QtTest);
        RunConfig config = tinyGuiConfig(3);
        config.train.gradient_accumulation_steps = 2;
        queue.enqueue(QStringLiteral("a"), QString(), config);
        queue.enqueue(QStringLiteral("b"), QStringLiteral("lr=1e-3"), config);
        queue.enqueue(QStringLiteral("c"), QStringLiteral("lr=3e-4"), config);
        QCOMPARE(queue.rowCount(), 3);
        QCOMPARE(cell(queue, 1, RunQueue::SettingsColumn), QStringLiteral("lr=1e-3"));
        QCOMPARE(cell(queue, 0, RunQueue::BatchColumn), QStringLiteral("2×2×1 = 4"));
        QCOMPARE(cell(queue, 0, RunQueue::StatusColumn), QStringLiteral("waiting"));
        QCOMPARE(queue.nextWaiting(), 0);

        queue.markStarted(0, QStringLiteral("id0"));
        QCOMPARE(queue.running(), 0);
        QCOMPARE(queue.nextWaiting(), 1);
        QCOMPARE(cell(queue, 0, RunQueue::LossColumn), QStringLiteral("—"));
        queue.markFinished(0, summaryOf(RunStatus::Completed, 2.5));
        QCOMPARE(cell(queue, 0, RunQueue::StatusColumn), QStringLiteral("completed"));
        QCOMPARE(cell(queue, 0, RunQueue::LossColumn), QStringLiteral("2.5000"));
        queue.markStarted(1, QStringLiteral("id1"));
        queue.markFinished(1, summaryOf(RunStatus::Failed, std::nan("")));
        QCOMPARE(queue.countIn(RunQueue::State::Failed), 1);
        QCOMPARE(queue.endedRunIds(), (QStringList{QStringLiteral("id0"), QStringLiteral("id1")}));

        // Only a waiting job can be removed; clearing takes the ended ones.
        QVERIFY(!queue.removeWaiting(0));
        QVERIFY(queue.removeWaiting(2));
        QCOMPARE(queue.rowCount(), 2);
        queue.enqueue(QStringLiteral("d"), QString(), config);
        queue.clearEnded();
        QCOMPARE(queue.rowCount(), 1);
        QCOMPARE(cell(queue, 0, RunQueue::NameColumn), QStringLiteral("d"));
    }

    void gridFromTheEditorsKeepsTheGlobalBatch() {
        QueueView view;
        RunConfig base = tinyGuiConfig(3);
        base.train.micro_batch_size = 2;
        base.train.gradient_accumulation_steps = 2;  // B = 4
        view.setBaseConfig(base, QStringLiteral("configs/tiny.json"));
        selectField(child<QComboBox>(view, "gridField1"), QStringLiteral("train.micro_batch_size"));
        child<QLineEdit>(view, "gridValues1")->setText(QStringLiteral("1, 4"));
        selectField(child<QComboBox>(view, "gridField2"), QStringLiteral("train.lr"));
        child<QLineEdit>(view, "gridValues2")->setText(QStringLiteral("1e-3 3e-3"));
        QVERIFY(child<QCheckBox>(view, "keepGlobalBatch")->isChecked());
        QTest::mouseClick(child<QPushButton>(view, "enqueueGridButton"), Qt::LeftButton);

        const RunQueue& queue = *view.queue();
        QCOMPARE(queue.rowCount(), 4);
        QCOMPARE(queue.job(0).name, QStringLiteral("tiny m=1 lr=1e-3 K=4"));
        QCOMPARE(queue.job(3).name, QStringLiteral("tiny m=4 lr=3e-3 K=1"));
        QCOMPARE(queue.job(3).config.train.lr, 3e-3);
        for (int row = 0; row < 4; ++row) QCOMPARE(queue.job(row).config.globalBatch(), int64_t(4));
        QVERIFY(child<QPushButton>(view, "startQueueButton")->isEnabled());
        QCOMPARE(child<QLabel>(view, "queueStatus")->text(), QStringLiteral("4 waiting · 0 completed"));
    }

    void aBadGridQueuesNothingAndSaysWhy() {
        QueueView view;
        RunConfig base = tinyGuiConfig(3);
        base.train.gradient_accumulation_steps = 2;  // B = 4
        view.setBaseConfig(base, QStringLiteral("tiny"));
        selectField(child<QComboBox>(view, "gridField1"), QStringLiteral("train.micro_batch_size"));
        child<QLineEdit>(view, "gridValues1")->setText(QStringLiteral("1, 3"));
        QVERIFY(!view.enqueueEditedGrid());
        QCOMPARE(view.queue()->rowCount(), 0);
        QVERIFY2(view.gridMessage().contains(QStringLiteral("m=3")) &&
                     view.gridMessage().contains(QStringLiteral("1, 2, 4")),
                 qPrintable(view.gridMessage()));
        QVERIFY(!child<QPushButton>(view, "startQueueButton")->isEnabled());
    }

    void queuedRunsTrainOneAfterAnotherAndOpenInCompare() {
        MainWindow window(tinyGuiConfig(3), QStringLiteral("queue-test.json"));
        window.resize(1280, 800);
        window.show();
        QueueView* view = window.queueView();
        view->enqueueShownConfig();
        QVERIFY(view->enqueueGrid({{"train.lr", {"2e-3", "4e-3"}}}, true));
        RunQueue* queue = view->queue();
        QCOMPARE(queue->rowCount(), 3);

        QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
        QTest::mouseClick(child<QPushButton>(*view, "startQueueButton"), Qt::LeftButton);
        QVERIFY(view->isQueueRunning());
        QTRY_COMPARE_WITH_TIMEOUT(queue->countIn(RunQueue::State::Completed), 3, kRunTimeoutMs);
        QTRY_VERIFY(!view->isQueueRunning());
        // One run at a time: three runs, three ends, never two live.
        QCOMPARE(finished.count(), 3);

        // Each job is a run of the store with its own config.
        RunStore store(RunStore::defaultFolder());
        const double expected_lr[] = {tinyGuiConfig().train.lr, 2e-3, 4e-3};
        QStringList ids;
        for (int row = 0; row < 3; ++row) {
            const RunQueue::Job& job = queue->job(row);
            QVERIFY(!ids.contains(job.run_id));
            ids << job.run_id;
            const auto record = store.findRun(job.run_id.toStdString());
            QVERIFY2(record.has_value(), qPrintable(job.run_id));
            QCOMPARE(QString::fromStdString(record->name), job.name);
            QCOMPARE(record->status, std::string("completed"));
            QCOMPARE(record->steps, int64_t(3));
            QCOMPARE(parseRunConfig(record->config_json).train.lr, expected_lr[row]);
            QVERIFY(std::isfinite(job.final_loss));
        }
        QCOMPARE(queue->job(1).name, QStringLiteral("queue-test lr=2e-3"));

        QPushButton* compare = child<QPushButton>(*view, "compareButton");
        QVERIFY(compare->isEnabled());
        QTest::mouseClick(compare, Qt::LeftButton);
        QCOMPARE(window.compareView()->runIds(), ids);
    }

    void stoppingTheQueuesRunPausesTheQueue() {
        MainWindow window(tinyGuiConfig(100000), QStringLiteral("queue-stop"));
        window.show();
        QueueView* view = window.queueView();
        view->enqueueShownConfig();
        view->enqueueShownConfig();
        RunQueue* queue = view->queue();
        QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
        window.startQueue();
        QCOMPARE(queue->running(), 0);
        QVERIFY(window.bridge()->isLive());
        window.stopRun();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
        QCOMPARE(queue->job(0).state, RunQueue::State::Stopped);
        // The second job waits for the user rather than starting behind their back.
        QVERIFY(!view->isQueueRunning());
        QTest::qWait(50);
        QCOMPARE(queue->job(1).state, RunQueue::State::Waiting);
        QVERIFY(!window.bridge()->isLive());
    }

    void stopAfterThisRunLetsTheRunFinish() {
        MainWindow window(tinyGuiConfig(5), QStringLiteral("queue-after"));
        QueueView* view = window.queueView();
        view->enqueueShownConfig();
        view->enqueueShownConfig();
        RunQueue* queue = view->queue();
        window.startQueue();
        QCOMPARE(queue->running(), 0);
        auto* button = child<QPushButton>(*view, "startQueueButton");
        QCOMPARE(button->text(), QStringLiteral("Stop queue after this run"));
        QTest::mouseClick(button, Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(queue->job(0).state, RunQueue::State::Completed, kRunTimeoutMs);
        QTest::qWait(50);
        QCOMPARE(queue->job(1).state, RunQueue::State::Waiting);
        QVERIFY(!window.bridge()->isLive());
    }

    void aQueueStartedDuringARunStartsWhenItEnds() {
        MainWindow window(tinyGuiConfig(4), QStringLiteral("queue-behind"));
        QueueView* view = window.queueView();
        QVERIFY(window.startRun());
        view->enqueueShownConfig();
        window.startQueue();
        RunQueue* queue = view->queue();
        // Nothing starts beside the live run: the job waits for it.
        QCOMPARE(queue->job(0).state, RunQueue::State::Waiting);
        QTRY_COMPARE_WITH_TIMEOUT(queue->job(0).state, RunQueue::State::Completed, kRunTimeoutMs);
        QTRY_VERIFY(!view->isQueueRunning());
    }

    void aJobTheEngineRefusesIsMarkedAndTheNextRuns() {
        MainWindow window(tinyGuiConfig(2), QStringLiteral("queue-refused"));
        QueueView* view = window.queueView();
        RunConfig invalid = tinyGuiConfig(2);
        invalid.train.micro_batch_size = 0;
        view->queue()->enqueue(QStringLiteral("broken"), QString(), invalid);
        view->enqueueShownConfig();
        RunQueue* queue = view->queue();
        window.startQueue();
        QCOMPARE(queue->job(0).state, RunQueue::State::Failed);
        QVERIFY2(queue->job(0).message.contains(QStringLiteral("train.micro_batch_size")),
                 qPrintable(queue->job(0).message));
        QTRY_COMPARE_WITH_TIMEOUT(queue->job(1).state, RunQueue::State::Completed, kRunTimeoutMs);
    }
};

QTEST_MAIN(TestRunQueue)
#include "test_run_queue.moc"
