// Tests the Compare view against a store filled by hand: config diff, summary numbers, curves and their CSV.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "widget_lookup.h"
#include "compare_view.h"
#include "main_window.h"
#include "runs_panel.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"
#include "trainbench/run_store.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

MetricPoint point(int64_t step, double wall_time, const std::string& key, double value) {
    MetricPoint p;
    p.step = step;
    p.tokens = 64 * step;
    p.wall_time = wall_time;
    p.key = key;
    p.value = value;
    return p;
}

// `values[i]` at step i + 1, half a second apart.
std::vector<MetricPoint> series(const std::string& key, const std::vector<double>& values) {
    std::vector<MetricPoint> points;
    for (size_t i = 0; i < values.size(); ++i)
        points.push_back(point(static_cast<int64_t>(i) + 1, 0.5 * static_cast<double>(i + 1), key, values[i]));
    return points;
}

std::string configJson(int64_t micro_batch, int64_t accumulation) {
    RunConfig config = builtinTinyConfig();
    config.train.micro_batch_size = micro_batch;
    config.train.gradient_accumulation_steps = accumulation;
    config.train.global_batch_size.reset();
    config.runtime.world_size = 1;
    return runConfigToJson(config);
}

QString text(const QTableWidget* table, int row, int column) {
    const QTableWidgetItem* item = table->item(row, column);
    return item ? item->text() : QString();
}

}  // namespace

class TestCompareView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void summaryEqualsHandComputedNumbers();
    void configDiffShowsExactlyTheDifferingKeys();
    void curvesAndKeysOfTheSelectedRuns();
    void csvExportEqualsStoredPoints();
    void unknownRunIsReported();
    void windowComparesTheSelectedRuns();

private:
    void loadBoth(CompareView& view);

    QTemporaryDir dir_;
};

void TestCompareView::initTestCase() {
    QVERIFY(dir_.isValid());
    qputenv("TRAINBENCH_STORE", dir_.path().toLocal8Bit());
    RunStore store(dir_.path().toStdString());

    RunRecord a;
    a.run_id = "run-a";
    a.name = "m2-k4";
    a.created = "2026-01-01T10:00:00Z";
    a.config_json = configJson(2, 4);
    store.createRun(a);
    std::vector<MetricPoint> points = series("train/loss", {4.0, 3.1, 2.7, 2.9, 2.8});
    for (const MetricPoint& p : series("perf/tokens_per_s", {1000, 1200, 1100, 1300, 1400})) points.push_back(p);
    for (const MetricPoint& p : series("train/lr", {1e-4, 2e-4, 3e-4, 3e-4, 2e-4})) points.push_back(p);
    for (const MetricPoint& p : series("mem/cpu0/peak_bytes", {1e6, 3e6, 2e6})) points.push_back(p);
    points.push_back(point(4, 2.75, "mem/cpu1/peak_bytes", 2.5e6));
    points.push_back(point(5, 2.5, "mem/cpu1/peak_bytes", 4e6));
    points.push_back(point(5, 2.5, "mem/cpu0/allocated_bytes", 9e6));  // not a peak: ignored
    store.commitBatch("run-a", points, {});
    store.finishRun("run-a", "completed", 5, 2.8, "");

    RunRecord b;
    b.run_id = "run-b";
    b.name = "m4-k2";
    b.created = "2026-01-02T10:00:00Z";
    b.config_json = configJson(4, 2);
    store.createRun(b);
    points = series("train/loss", {5.0, 4.0, 3.4, 3.5, 3.6});
    for (const MetricPoint& p : series("perf/tokens_per_s", {800, 900})) points.push_back(p);
    store.commitBatch("run-b", points, {});
    store.finishRun("run-b", "completed", 5, 3.6, "");
}

void TestCompareView::loadBoth(CompareView& view) {
    QSignalSpy loaded(&view, &CompareView::loaded);
    view.setRuns({QStringLiteral("run-a"), QStringLiteral("run-b")});
    QVERIFY(!view.isLoaded());
    QTRY_COMPARE(loaded.count(), 1);
    QVERIFY(view.isLoaded());
}

void TestCompareView::summaryEqualsHandComputedNumbers() {
    CompareView view;
    loadBoth(view);
    QCOMPARE(view.summaries().size(), size_t{2});

    const CompareSummary& a = view.summaries()[0];
    QCOMPARE(a.run_id, QStringLiteral("run-a"));
    QCOMPARE(a.name, QStringLiteral("m2-k4"));
    QCOMPARE(a.final_loss, 2.8);
    QCOMPARE(a.best_loss, 2.7);
    QCOMPARE(a.tokens_per_s, (1000.0 + 1200.0 + 1100.0 + 1300.0 + 1400.0) / 5.0);
    QCOMPARE(a.peak_memory_bytes, 4e6);
    QCOMPARE(a.wall_time_s, 2.75);
    QCOMPARE(a.micro_batch_size, int64_t{2});
    QCOMPARE(a.accumulation_steps, int64_t{4});
    QCOMPARE(a.world_size, int64_t{1});
    QCOMPARE(a.global_batch_size, int64_t{8});

    const CompareSummary& b = view.summaries()[1];
    QCOMPARE(b.final_loss, 3.6);
    QCOMPARE(b.best_loss, 3.4);
    QCOMPARE(b.tokens_per_s, 850.0);
    QVERIFY(std::isnan(b.peak_memory_bytes));
    QCOMPARE(b.wall_time_s, 2.5);
    QCOMPARE(b.micro_batch_size, int64_t{4});
    QCOMPARE(b.accumulation_steps, int64_t{2});
    QCOMPARE(b.global_batch_size, int64_t{8});

    auto* table = child<QTableWidget>(view, "compareSummaryTable");
    QVERIFY(table);
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(text(table, 0, CompareView::RunName), QStringLiteral("m2-k4"));
    QCOMPARE(text(table, 0, CompareView::FinalLoss), QStringLiteral("2.8000"));
    QCOMPARE(text(table, 0, CompareView::BestLoss), QStringLiteral("2.7000"));
    QCOMPARE(text(table, 0, CompareView::MicroBatch), QStringLiteral("2"));
    QCOMPARE(text(table, 0, CompareView::Accumulation), QStringLiteral("4"));
    QCOMPARE(text(table, 0, CompareView::GlobalBatch), QStringLiteral("8"));
    QCOMPARE(text(table, 1, CompareView::BestLoss), QStringLiteral("3.4000"));
    QCOMPARE(text(table, 1, CompareView::PeakMemory), QStringLiteral("—"));
}

void TestCompareView::configDiffShowsExactlyTheDifferingKeys() {
    CompareView view;
    loadBoth(view);
    auto* table = child<QTableWidget>(view, "configDiffTable");
    auto* all_keys = child<QCheckBox>(view, "showAllKeysCheck");
    QVERIFY(table && all_keys);
    QVERIFY(!all_keys->isChecked());

    QCOMPARE(table->columnCount(), 3);
    QCOMPARE(table->horizontalHeaderItem(1)->text(), QStringLiteral("m2-k4"));
    QCOMPARE(table->horizontalHeaderItem(2)->text(), QStringLiteral("m4-k2"));
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(text(table, 0, 0), QStringLiteral("train.gradient_accumulation_steps"));
    QCOMPARE(text(table, 0, 1), QStringLiteral("4"));
    QCOMPARE(text(table, 0, 2), QStringLiteral("2"));
    QCOMPARE(text(table, 1, 0), QStringLiteral("train.micro_batch_size"));
    QCOMPARE(text(table, 1, 1), QStringLiteral("2"));
    QCOMPARE(text(table, 1, 2), QStringLiteral("4"));

    // Every key of the config, equal values included (the two above among them).
    all_keys->setChecked(true);
    QVERIFY(table->rowCount() > 20);
    QStringList keys;
    for (int row = 0; row < table->rowCount(); ++row) keys << text(table, row, 0);
    QVERIFY(keys.contains(QStringLiteral("train.lr")));
    QVERIFY(keys.contains(QStringLiteral("train.micro_batch_size")));
    const int lr_row = static_cast<int>(keys.indexOf(QStringLiteral("train.lr")));
    QCOMPARE(text(table, lr_row, 1), text(table, lr_row, 2));
    all_keys->setChecked(false);
    QCOMPARE(table->rowCount(), 2);
}

void TestCompareView::curvesAndKeysOfTheSelectedRuns() {
    CompareView view;
    loadBoth(view);
    auto* keys = child<QComboBox>(view, "compareKeyCombo");
    auto* plot = child<QCustomPlot>(view, "comparePlot");
    QVERIFY(keys && plot);
    QCOMPARE(view.key(), QStringLiteral("train/loss"));
    QStringList offered;
    for (int i = 0; i < keys->count(); ++i) offered << keys->itemText(i);
    QCOMPARE(offered, (QStringList{QStringLiteral("mem/cpu0/allocated_bytes"), QStringLiteral("mem/cpu0/peak_bytes"),
                                   QStringLiteral("mem/cpu1/peak_bytes"), QStringLiteral("perf/tokens_per_s"),
                                   QStringLiteral("train/loss"), QStringLiteral("train/lr")}));
    QCOMPARE(view.axis(), CompareView::Axis::Tokens);

    // One smoothed and one raw graph per run; the legend names the runs.
    QCOMPARE(plot->graphCount(), 4);
    QCOMPARE(plot->legend->itemCount(), 2);
    QCOMPARE(plot->graph(1)->name(), QStringLiteral("m2-k4"));
    QCOMPARE(plot->graph(3)->name(), QStringLiteral("m4-k2"));
    QCOMPARE(plot->graph(0)->data()->at(2)->key, 64.0 * 3);  // tokens seen at step 3
    QCOMPARE(plot->graph(0)->data()->at(2)->value, 2.7);
    view.setAxis(CompareView::Axis::Step);
    QCOMPARE(plot->graph(0)->data()->at(2)->key, 3.0);

    QSignalSpy loaded(&view, &CompareView::loaded);
    QVERIFY(view.setKey(QStringLiteral("perf/tokens_per_s")));
    QTRY_COMPARE(loaded.count(), 1);
    QCOMPARE(view.curves().size(), size_t{2});
    QCOMPARE(view.curves()[0].points.size(), size_t{5});
    QCOMPARE(view.curves()[1].points.size(), size_t{2});
    QCOMPARE(plot->graph(2)->data()->at(1)->value, 900.0);
    QVERIFY(!view.setKey(QStringLiteral("no/such_key")));
}

void TestCompareView::csvExportEqualsStoredPoints() {
    CompareView view;
    loadBoth(view);
    QTemporaryDir out;
    const QString path = out.filePath(QStringLiteral("curves.csv"));
    QVERIFY(view.exportCsv(path));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly | QIODevice::Text));
    QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.takeFirst(), QStringLiteral("run_id,step,tokens,wall_time,key,value"));

    RunStore store(dir_.path().toStdString());
    std::vector<std::pair<std::string, MetricPoint>> expected;
    for (const std::string id : {"run-a", "run-b"})
        for (const MetricPoint& p : store.metrics(id, "train/loss")) expected.emplace_back(id, p);
    QCOMPARE(lines.size(), static_cast<qsizetype>(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
        const QStringList fields = lines[static_cast<qsizetype>(i)].split(QLatin1Char(','));
        const auto& [id, p] = expected[i];
        QCOMPARE(fields.size(), 6);
        QCOMPARE(fields[0], QString::fromStdString(id));
        QCOMPARE(fields[1].toLongLong(), p.step);
        QCOMPARE(fields[2].toLongLong(), p.tokens);
        QCOMPARE(fields[3].toDouble(), p.wall_time);
        QCOMPARE(fields[4], QStringLiteral("train/loss"));
        QCOMPARE(fields[5].toDouble(), p.value);
    }
}

void TestCompareView::unknownRunIsReported() {
    CompareView view;
    QSignalSpy failed(&view, &CompareView::loadFailed);
    QSignalSpy loaded(&view, &CompareView::loaded);
    view.setRuns({QStringLiteral("run-a"), QStringLiteral("no-such-run")});
    QTRY_COMPARE(loaded.count(), 1);
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains(QStringLiteral("no-such-run")));
    QCOMPARE(view.summaries().size(), size_t{1});
    QCOMPARE(view.curves().size(), size_t{1});
}

void TestCompareView::windowComparesTheSelectedRuns() {
    MainWindow window(builtinTinyConfig(), QStringLiteral("tiny"));
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* tabs = child<QTabWidget>(window, "mainTabs");
    auto* side = child<QWidget>(window, "sidePanel");
    auto* dock = child<QDockWidget>(window, "runsDock");
    QVERIFY(tabs && side && dock);
    QVERIFY(side->isVisible());
    QVERIFY(!dock->isVisible());

    QSignalSpy loaded(window.compareView(), &CompareView::loaded);
    window.compareRuns({QStringLiteral("run-b"), QStringLiteral("run-a")});
    QCOMPARE(tabs->currentWidget(), window.compareView());
    QVERIFY(dock->isVisible());
    QVERIFY(!side->isVisible());
    QTRY_VERIFY(loaded.count() >= 1 && window.compareView()->isLoaded());
    // The list shows the selection (newest first) and the view compares exactly those runs.
    QTRY_COMPARE(window.runsPanel()->selectedRunIds(), (QStringList{QStringLiteral("run-b"), QStringLiteral("run-a")}));
    QCOMPARE(window.compareView()->summaries().size(), size_t{2});

    // Selecting one run in the list compares that one alone.
    window.runsPanel()->selectRuns({QStringLiteral("run-a")});
    QTRY_COMPARE(window.compareView()->runIds(), QStringList{QStringLiteral("run-a")});
    QTRY_VERIFY(window.compareView()->isLoaded());
    QCOMPARE(window.compareView()->summaries().size(), size_t{1});

    window.showTab(MainWindow::Tab::Training);
    QVERIFY(side->isVisible());
    QVERIFY(!dock->isVisible());
}

QTEST_MAIN(TestCompareView)
#include "test_compare_view.moc"
