// Tests the Compare view against a store filled by hand: config diff, summary numbers, curves and their CSV.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "widget_lookup.h"
#include "compare/compare_view.h"
#include "app/main_window.h"
#include "runs/runs_panel.h"
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

std::string seededConfigJson(int64_t train_seed, int64_t data_seed, double lr = 3e-4) {
    RunConfig config = builtinTinyConfig();
    config.train.seed = train_seed;
    config.data.seed = data_seed;
    config.train.lr = lr;
    return runConfigToJson(config);
}

void addFinishedRun(RunStore& store, const std::string& id, const std::string& name, const std::string& config_json,
                    const std::vector<MetricPoint>& points) {
    RunRecord run;
    run.run_id = id;
    run.name = name;
    run.created = "2026-01-03T10:00:00Z";
    run.config_json = config_json;
    store.createRun(run);
    store.commitBatch(id, points, {});
    store.finishRun(id, "completed", points.empty() ? 0 : points.back().step, points.empty() ? 0.0 : points.back().value,
                    "");
}

// TensorBoard's debiased EMA with weight 0.6 after two and three values, written out.
double ema2(double y1, double y2) {
    return (0.6 * 0.4 * y1 + 0.4 * y2) / (1.0 - 0.6 * 0.6);
}
double ema3(double y1, double y2, double y3) {
    return (0.6 * 0.6 * 0.4 * y1 + 0.6 * 0.4 * y2 + 0.4 * y3) / (1.0 - 0.6 * 0.6 * 0.6);
}

bool near(double a, double b) {
    return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
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
    void seedGroupIsMeanAndBandOfItsRuns();
    void plotExportsAsPngAndPdf();
    void runningRunGrowsLiveUntilItEnds();

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

    // Three runs of one config with other seeds, of different lengths, and one other config.
    addFinishedRun(store, "seed-1", "tiny-s1", seededConfigJson(1, 1234), series("train/loss", {3.0, 2.0, 1.0}));
    addFinishedRun(store, "seed-2", "tiny-s2", seededConfigJson(2, 7), series("train/loss", {5.0, 4.0, 2.0, 1.5}));
    std::vector<MetricPoint> third = series("train/loss", {4.0, 3.0});
    for (MetricPoint& p : third) p.tokens = 70 * p.step;  // a slightly different batch: x is averaged
    addFinishedRun(store, "seed-3", "tiny-s3", seededConfigJson(3, 1234), third);
    addFinishedRun(store, "lr-other", "tiny-lr", seededConfigJson(1, 1234, 1e-3), series("train/loss", {6.0, 5.0}));
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

void TestCompareView::seedGroupIsMeanAndBandOfItsRuns() {
    CompareView view;
    QSignalSpy loaded(&view, &CompareView::loaded);
    view.setRuns({QStringLiteral("seed-1"), QStringLiteral("seed-2"), QStringLiteral("seed-3"),
                  QStringLiteral("lr-other")});
    QTRY_COMPARE(loaded.count(), 1);
    auto* plot = child<QCustomPlot>(view, "comparePlot");
    auto* group = child<QCheckBox>(view, "groupSeedsCheck");
    QVERIFY(plot && group);
    QVERIFY(group->isEnabled());
    QVERIFY(group->isChecked());
    QVERIFY(view.groupSeeds());
    const std::vector<std::vector<size_t>> expected_groups = {{0, 1, 2}, {3}};
    QCOMPARE(view.plotGroups(), expected_groups);

    // The group: raw mean, band low, band high, smoothed mean; then the other run: raw, smoothed.
    QCOMPARE(plot->graphCount(), 6);
    QCOMPARE(plot->legend->itemCount(), 2);
    QCOMPARE(plot->graph(3)->name(), QStringLiteral("tiny-s1 (3 seeds)"));
    QCOMPARE(plot->graph(5)->name(), QStringLiteral("tiny-lr"));
    QCOMPARE(plot->graph(2)->channelFillGraph(), plot->graph(1));
    QVERIFY(plot->graph(2)->brush().color().alpha() < 255);

    view.setAxis(CompareView::Axis::Step);
    QCPGraph* raw_mean = plot->graph(0);
    QCPGraph* low = plot->graph(1);
    QCPGraph* high = plot->graph(2);
    QCPGraph* mean = plot->graph(3);
    QCOMPARE(raw_mean->dataCount(), 4);  // steps 1..4: the longest run sets the length
    QCOMPARE(raw_mean->data()->at(0)->value, (3.0 + 5.0 + 4.0) / 3.0);
    QCOMPARE(raw_mean->data()->at(1)->value, (2.0 + 4.0 + 3.0) / 3.0);
    QCOMPARE(raw_mean->data()->at(2)->value, (1.0 + 2.0) / 2.0);  // seed-3 ended at step 2
    QCOMPARE(raw_mean->data()->at(3)->value, 1.5);                // seed-2 alone
    // The band and the line: min, max and mean of the runs' smoothed curves at each step.
    QCOMPARE(low->data()->at(0)->key, 1.0);
    QCOMPARE(low->data()->at(0)->value, 3.0);  // the first smoothed value is the raw one
    QCOMPARE(high->data()->at(0)->value, 5.0);
    QCOMPARE(mean->data()->at(0)->value, 4.0);
    QVERIFY(near(low->data()->at(1)->value, ema2(3.0, 2.0)));   // 2.375
    QVERIFY(near(high->data()->at(1)->value, ema2(5.0, 4.0)));  // 4.375
    QVERIFY(near(mean->data()->at(1)->value, (ema2(3.0, 2.0) + ema2(5.0, 4.0) + ema2(4.0, 3.0)) / 3.0));
    QVERIFY(near(mean->data()->at(1)->value, 3.375));
    QVERIFY(near(low->data()->at(2)->value, ema3(3.0, 2.0, 1.0)));
    QVERIFY(near(high->data()->at(2)->value, ema3(5.0, 4.0, 2.0)));
    QVERIFY(near(mean->data()->at(2)->value, (ema3(3.0, 2.0, 1.0) + ema3(5.0, 4.0, 2.0)) / 2.0));

    // On the tokens axis a group's x is the mean of its runs' tokens at that step.
    view.setAxis(CompareView::Axis::Tokens);
    QCOMPARE(plot->graph(3)->data()->at(0)->key, (64.0 + 64.0 + 70.0) / 3.0);
    QCOMPARE(plot->graph(3)->data()->at(1)->key, (128.0 + 128.0 + 140.0) / 3.0);
    QCOMPARE(plot->graph(3)->data()->at(2)->key, 192.0);
    QCOMPARE(plot->graph(3)->data()->at(3)->key, 256.0);

    // Unticked: one line per run again, in the group's colour order.
    group->setChecked(false);
    QVERIFY(!view.groupSeeds());
    QCOMPARE(plot->graphCount(), 8);
    QCOMPARE(plot->legend->itemCount(), 4);
    QCOMPARE(plot->graph(1)->name(), QStringLiteral("tiny-s1"));
    group->setChecked(true);
    QCOMPARE(plot->graphCount(), 6);

    // Runs without a seed group leave the box off and disabled.
    QSignalSpy reloaded(&view, &CompareView::loaded);
    view.setRuns({QStringLiteral("run-a"), QStringLiteral("run-b")});
    QTRY_COMPARE(reloaded.count(), 1);
    QVERIFY(!group->isEnabled());
    QVERIFY(!group->isChecked());
    QCOMPARE(plot->graphCount(), 4);
}

void TestCompareView::plotExportsAsPngAndPdf() {
    CompareView view;
    view.resize(900, 700);
    loadBoth(view);
    QTemporaryDir out;
    const QString png = out.filePath(QStringLiteral("plot.png"));
    QVERIFY(view.exportPlot(png, 640, 400));
    const QImage image(png);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), QSize(640, 400));

    const QString pdf = out.filePath(QStringLiteral("plot.pdf"));
    QVERIFY(view.exportPlot(pdf, 640, 400));
    QFile file(pdf);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.size() > 1000);
    QCOMPARE(file.read(4), QByteArray("%PDF"));

    QVERIFY(!view.exportPlot(out.filePath(QStringLiteral("plot.svg")), 640, 400));
}

void TestCompareView::runningRunGrowsLiveUntilItEnds() {
    // This store plays the headless trainer: another writer of the same folder.
    RunStore store(dir_.path().toStdString());
    RunRecord run;
    run.run_id = "run-live";
    run.name = "live";
    run.created = "2026-01-04T10:00:00Z";
    run.config_json = configJson(1, 8);  // not run-a's config: no seed group here
    store.createRun(run);
    store.commitBatch("run-live", series("train/loss", {5.0, 4.5, 4.0, 3.8, 3.5}), {});

    CompareView view;
    QSignalSpy loaded(&view, &CompareView::loaded);
    view.setRuns({QStringLiteral("run-live"), QStringLiteral("run-a")});
    QTRY_COMPARE(loaded.count(), 1);
    auto* plot = child<QCustomPlot>(view, "comparePlot");
    QVERIFY(plot);
    QCOMPARE(plot->graph(1)->dataCount(), 5);
    QVERIFY(view.isPolling());

    std::vector<MetricPoint> more;
    for (int64_t step = 6; step <= 9; ++step) more.push_back(point(step, 0.5 * static_cast<double>(step), "train/loss", 4.0 - 0.25 * static_cast<double>(step)));
    store.commitBatch("run-live", more, {});
    QTRY_COMPARE(plot->graph(1)->dataCount(), 9);
    QCOMPARE(view.curves()[0].points.size(), size_t{9});
    QCOMPARE(view.curves()[0].points.back().step, int64_t{9});
    QCOMPARE(plot->graph(0)->data()->at(8)->value, 4.0 - 0.25 * 9);
    QCOMPARE(view.curves()[1].points.size(), size_t{5});  // a finished run is not read again
    QVERIFY(view.isPolling());

    store.commitBatch("run-live", {point(10, 5.0, "train/loss", 1.25)}, {});
    store.finishRun("run-live", "completed", 10, 1.25, "");
    QTRY_VERIFY(!view.isPolling());
    QCOMPARE(view.curves()[0].points.size(), size_t{10});
    QCOMPARE(plot->graph(1)->dataCount(), 10);
    QCOMPARE(view.summaries()[0].final_loss, 1.25);
    QCOMPARE(view.summaries()[0].best_loss, 1.25);
}

QTEST_MAIN(TestCompareView)
#include "test_compare_view.moc"
