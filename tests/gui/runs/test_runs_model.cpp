// Tests the runs list: the model under QAbstractItemModelTester, in-place refreshes and the name/tag filter.
#include <optional>
#include <string>
#include <vector>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include "runs/runs_filter_proxy.h"
#include "runs/runs_model.h"
#include "runs/runs_panel.h"
#include "trainbench/run_store.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

RunRecord record(const std::string& id, const std::string& name, const std::string& created,
                 const std::string& tags = "") {
    RunRecord run;
    run.run_id = id;
    run.name = name;
    run.created = created;
    run.tags = tags;
    run.config_json = "{}";
    return run;
}

// Three train/loss points; the last is the run's final loss.
void writeLoss(RunStore& store, const std::string& id, double first) {
    std::vector<MetricPoint> points;
    for (int step = 1; step <= 3; ++step) {
        MetricPoint point;
        point.step = step;
        point.tokens = 64 * step;
        point.wall_time = 0.5 * step;
        point.key = "train/loss";
        point.value = first - 0.25 * step;
        points.push_back(point);
    }
    store.commitBatch(id, points, {});
}

QString cellText(const QAbstractItemModel& model, int row, int column) {
    return model.index(row, column).data().toString();
}

}  // namespace

class TestRunsModel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void listsRunsNewestFirst();
    void refreshUpdatesInPlace();
    void filterMatchesNameOrTag_data();
    void filterMatchesNameOrTag();
    void panelSelectsRequestedRuns();

private:
    QTemporaryDir dir_;
    std::optional<RunStore> store_;
};

void TestRunsModel::initTestCase() {
    QVERIFY(dir_.isValid());
    // The model opens RunStore::defaultFolder(): the suite's own store, never the user's.
    qputenv("TRAINBENCH_STORE", dir_.path().toLocal8Bit());
}

void TestRunsModel::init() {
    // A fresh store per test: the folder is emptied and reopened.
    store_.reset();
    QFile::remove(dir_.filePath(QStringLiteral("runs.db")));
    QFile::remove(dir_.filePath(QStringLiteral("runs.db-wal")));
    QFile::remove(dir_.filePath(QStringLiteral("runs.db-shm")));
    store_.emplace(dir_.path().toStdString());
    store_->createRun(record("run-old", "baseline", "2026-01-01T10:00:00Z", "tiny,baseline"));
    writeLoss(*store_, "run-old", 4.0);
    store_->finishRun("run-old", "completed", 3, 3.25, "");
    store_->createRun(record("run-new", "low-lr", "2026-01-02T10:00:00Z", "sweep"));
    writeLoss(*store_, "run-new", 5.0);
}

void TestRunsModel::listsRunsNewestFirst() {
    RunsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.storeFolder(), dir_.path());
    QSignalSpy refreshed(&model, &RunsModel::refreshed);
    model.refresh();
    QTRY_COMPARE(refreshed.count(), 1);

    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), static_cast<int>(RunsModel::ColumnCount));
    QCOMPARE(model.index(0, 0).data(RunsModel::RunIdRole).toString(), QStringLiteral("run-new"));
    QCOMPARE(model.index(1, 0).data(RunsModel::RunIdRole).toString(), QStringLiteral("run-old"));
    QCOMPARE(cellText(model, 0, RunsModel::Name), QStringLiteral("low-lr"));
    QCOMPARE(cellText(model, 0, RunsModel::Status), QStringLiteral("running"));
    QCOMPARE(cellText(model, 1, RunsModel::Status), QStringLiteral("completed"));
    QCOMPARE(model.index(1, RunsModel::Steps).data().toLongLong(), 3LL);
    QCOMPARE(cellText(model, 1, RunsModel::FinalLoss), QStringLiteral("3.2500"));
    QCOMPARE(model.index(1, RunsModel::FinalLoss).data(RunsModel::SortRole).toDouble(), 3.25);
    QCOMPARE(cellText(model, 1, RunsModel::Tags), QStringLiteral("tiny,baseline"));
    QVERIFY(cellText(model, 1, RunsModel::Created).startsWith(QStringLiteral("01-0")));
    QCOMPARE(model.index(1, RunsModel::Created).data(RunsModel::SortRole).toString(), QStringLiteral("2026-01-01T10:00:00Z"));
    QCOMPARE(model.headerData(RunsModel::FinalLoss, Qt::Horizontal).toString(), QStringLiteral("Final loss"));
}

void TestRunsModel::refreshUpdatesInPlace() {
    RunsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy refreshed(&model, &RunsModel::refreshed);
    model.refresh();
    QTRY_COMPARE(refreshed.count(), 1);
    const QPersistentModelIndex old_run = model.index(1, RunsModel::Name);
    QCOMPARE(old_run.data(RunsModel::RunIdRole).toString(), QStringLiteral("run-old"));

    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);

    // A new run, and the running one finishes.
    store_->createRun(record("run-newest", "wide", "2026-01-03T10:00:00Z"));
    store_->finishRun("run-new", "stopped", 3, 4.25, "");
    model.refresh();
    QTRY_COMPARE(refreshed.count(), 2);

    QCOMPARE(resets.count(), 0);
    QCOMPARE(removed.count(), 0);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(inserted.at(0).at(1).toInt(), 0);  // first
    QCOMPARE(inserted.at(0).at(2).toInt(), 0);  // last
    QCOMPARE(changed.count(), 1);
    QCOMPARE(changed.at(0).at(0).value<QModelIndex>().row(), 1);  // run-new, one row down after the insert
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(cellText(model, 0, RunsModel::Name), QStringLiteral("wide"));
    QCOMPARE(cellText(model, 0, RunsModel::Status), QStringLiteral("running"));
    QCOMPARE(cellText(model, 1, RunsModel::Status), QStringLiteral("stopped"));
    QCOMPARE(cellText(model, 1, RunsModel::FinalLoss), QStringLiteral("4.2500"));
    // The untouched run kept its index (so views keep its selection) and moved one row down.
    QVERIFY(old_run.isValid());
    QCOMPARE(old_run.row(), 2);
    QCOMPARE(old_run.data().toString(), QStringLiteral("baseline"));

    // Nothing changed: nothing signalled.
    model.refresh();
    QTRY_COMPARE(refreshed.count(), 3);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(resets.count(), 0);
}

void TestRunsModel::filterMatchesNameOrTag_data() {
    QTest::addColumn<QString>("filter");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("empty") << QString() << QStringList{QStringLiteral("run-new"), QStringLiteral("run-old")};
    QTest::newRow("name") << QStringLiteral("LOW") << QStringList{QStringLiteral("run-new")};
    QTest::newRow("tag") << QStringLiteral("tiny") << QStringList{QStringLiteral("run-old")};
    QTest::newRow("status is not matched") << QStringLiteral("completed") << QStringList{};
}

void TestRunsModel::filterMatchesNameOrTag() {
    QFETCH(QString, filter);
    QFETCH(QStringList, expected);
    RunsPanel panel;
    QSignalSpy refreshed(panel.model(), &RunsModel::refreshed);
    QTRY_VERIFY(refreshed.count() >= 1);
    auto* edit = panel.findChild<QLineEdit*>(QStringLiteral("runsFilter"));
    auto* view = panel.findChild<QTableView*>(QStringLiteral("runsView"));
    QVERIFY(edit && view);
    QAbstractItemModelTester tester(view->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    edit->setText(filter);
    QStringList shown;
    for (int row = 0; row < view->model()->rowCount(); ++row)
        shown << view->model()->index(row, 0).data(RunsModel::RunIdRole).toString();
    QCOMPARE(shown, expected);
}

void TestRunsModel::panelSelectsRequestedRuns() {
    RunsPanel panel;
    QSignalSpy selection(&panel, &RunsPanel::selectionChanged);
    // Asked before the first read of the store has arrived: applied when it does.
    panel.selectRuns({QStringLiteral("run-old"), QStringLiteral("run-new")});
    QTRY_COMPARE(panel.selectedRunIds(), (QStringList{QStringLiteral("run-new"), QStringLiteral("run-old")}));
    QVERIFY(selection.count() >= 1);
    QCOMPARE(selection.last().at(0).toStringList(), panel.selectedRunIds());

    // A refresh that adds a run keeps the selection.
    store_->createRun(record("run-newest", "wide", "2026-01-03T10:00:00Z"));
    QSignalSpy refreshed(panel.model(), &RunsModel::refreshed);
    panel.model()->refresh();
    QTRY_COMPARE(refreshed.count(), 1);
    QCOMPARE(panel.model()->rowCount(), 3);
    QCOMPARE(panel.selectedRunIds(), (QStringList{QStringLiteral("run-new"), QStringLiteral("run-old")}));
}

QTEST_MAIN(TestRunsModel)
#include "test_runs_model.moc"
