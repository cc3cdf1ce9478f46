// Tests RunSeries without a window: which key becomes which series, the EMA against one computed here, memory per device, eval points, ignored keys, and the live plots and Compare drawing the same series.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "metric_points.h"
#include "compare/compare_runs.h"
#include "monitor/metric_plots.h"
#include "runs/run_series.h"
#include "trainbench/config_io.h"
#include "trainbench/metric_keys.h"
#include "trainbench/presets.h"
#include "trainbench/run_store.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// TensorBoard's debiased EMA, written out independently of EmaSmoother: after n finite values
// y1..yn, (1 - w) * sum_i w^(n - i) y_i / (1 - w^n).
std::vector<double> debiasedEma(const std::vector<double>& values, double weight) {
    std::vector<double> out;
    for (size_t n = 1; n <= values.size(); ++n) {
        double sum = 0.0;
        for (size_t i = 1; i <= n; ++i) sum += std::pow(weight, static_cast<double>(n - i)) * values[i - 1];
        out.push_back((1.0 - weight) * sum / (1.0 - std::pow(weight, static_cast<double>(n))));
    }
    return out;
}

bool near(double actual, double expected) {
    return std::abs(actual - expected) <= 1e-12 * std::max(1.0, std::abs(expected));
}

std::vector<double> valuesOf(const MetricSeries& series) {
    std::vector<double> values;
    for (const SeriesSample& sample : series.samples()) values.push_back(sample.value);
    return values;
}

// Four steps as the trainer publishes them, 256 tokens a step, a step every half second, with
// memory samples of two devices (cuda1 first), an eval at step 2 and keys no curve draws.
QVector<MetricPoint> fourSteps() {
    const double losses[] = {4.0, 3.0, 2.5, 2.0};
    const double grad_norms[] = {1.0, 0.5, 2.0, 0.25};
    const double learning_rates[] = {1e-3, 2e-3, 3e-3, 4e-3};
    QVector<MetricPoint> points;
    for (int64_t step = 1; step <= 4; ++step) {
        const double wall = 0.5 * static_cast<double>(step);
        const int64_t tokens = 256 * step;
        points << point(metric::kLoss, step, losses[step - 1], wall, tokens)
               << point(metric::kGradNorm, step, grad_norms[step - 1], wall, tokens)
               << point(metric::kLearningRate, step, learning_rates[step - 1], wall, tokens)
               << point(metric::kTokens, step, static_cast<double>(tokens), wall, tokens)
               << point(metric::kTokensPerSecond, step, 500.0 + static_cast<double>(step), wall, tokens)
               << point(metric::kGlobalBatch, step, 4.0, wall, tokens)
               << point(metric::kStepTime, step, 0.5, wall, tokens)        // no curve
               << point("mem/cuda1/peak_bytes", step, 2e9 + static_cast<double>(step), wall, tokens)
               << point("mem/cuda0/allocated_bytes", step, 1e9, wall, tokens)
               << point("mem/cuda0/peak_bytes", step, 1.5e9, wall, tokens)
               << point("mem/cuda0/free_bytes", step, 7e10, wall, tokens)  // not memory held
               << point("mem/cuda0/utilization_percent", step, 99.0, wall, tokens);
        if (step == 2) points << point(metric::kEvalLoss, 2, 3.25, wall, tokens);
    }
    return points;
}

}  // namespace

class TestRunSeries : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void routesEachKeyToItsSeries();
    void smoothsLossAndGradNormOnly();
    void keepsMemoryPerDeviceKey();
    void keepsEvalPointsAtTheirSteps();
    void ignoresUnknownKeys();
    void placesSamplesOnTheTokenClock();
    void entropyFloorAndGlobalBatchAreValues();
    void resmoothsAndClears();
    void ofKeyKeepsOneKeySmoothed();
    void livePlotsDrawTheirRunSeries();
    void compareReadsTheSameSeriesAsTheLivePlots();
    void drawsTheMtpLossBesideTheMainLoss();
};

void TestRunSeries::routesEachKeyToItsSeries() {
    RunSeries series;
    const SeriesUpdate update = series.addPoints(fourSteps());
    QVERIFY(update.advanced);
    QVERIFY(!update.entropy_floor);
    QCOMPARE(valuesOf(series.series(SeriesName::Loss)), (std::vector<double>{4.0, 3.0, 2.5, 2.0}));
    QCOMPARE(valuesOf(series.series(SeriesName::GradNorm)), (std::vector<double>{1.0, 0.5, 2.0, 0.25}));
    QCOMPARE(valuesOf(series.series(SeriesName::LearningRate)), (std::vector<double>{1e-3, 2e-3, 3e-3, 4e-3}));
    QCOMPARE(valuesOf(series.series(SeriesName::Throughput)), (std::vector<double>{501.0, 502.0, 503.0, 504.0}));
    QCOMPARE(valuesOf(series.series(SeriesName::EvalLoss)), std::vector<double>{3.25});
    // Each named series is also found by its key.
    QCOMPARE(series.seriesOfKey(metric::kLoss), &series.series(SeriesName::Loss));
    QCOMPARE(series.seriesOfKey(metric::kTokensPerSecond), &series.series(SeriesName::Throughput));
    QCOMPARE(series.seriesOfKey(metric::kEvalLoss), &series.series(SeriesName::EvalLoss));
    // The run reached step 4, 1024 tokens, 2 s.
    QCOMPARE(series.lastStep(), int64_t{4});
    QCOMPARE(series.lastTokens(), 1024.0);
    QCOMPARE(series.lastWall(), 2.0);
}

void TestRunSeries::smoothsLossAndGradNormOnly() {
    RunSeries series;  // the live plots' weight, 0.6
    QCOMPARE(series.smoothingWeight(), 0.6);
    series.addPoints(fourSteps());
    const std::vector<double> loss_ema = debiasedEma({4.0, 3.0, 2.5, 2.0}, 0.6);
    const std::vector<double> grad_ema = debiasedEma({1.0, 0.5, 2.0, 0.25}, 0.6);
    // By hand for the first two: 4, then (0.6 * 0.4 * 4 + 0.4 * 3) / (1 - 0.36) = 2.16 / 0.64.
    QVERIFY(near(loss_ema[0], 4.0));
    QVERIFY(near(loss_ema[1], 3.375));
    const auto& loss = series.series(SeriesName::Loss).samples();
    const auto& grad = series.series(SeriesName::GradNorm).samples();
    QCOMPARE(loss.size(), size_t{4});
    for (size_t i = 0; i < 4; ++i) {
        QVERIFY2(near(loss[i].smoothed, loss_ema[i]), qPrintable(QString::number(loss[i].smoothed, 'g', 17)));
        QVERIFY2(near(grad[i].smoothed, grad_ema[i]), qPrintable(QString::number(grad[i].smoothed, 'g', 17)));
    }
    QVERIFY(series.series(SeriesName::Loss).smoothed());
    QVERIFY(series.series(SeriesName::GradNorm).smoothed());
    // The schedule and the rates are drawn as they are: their "EMA" is the value itself.
    for (SeriesName name : {SeriesName::LearningRate, SeriesName::Throughput, SeriesName::EvalLoss}) {
        QVERIFY(!series.series(name).smoothed());
        for (const SeriesSample& sample : series.series(name).samples()) QCOMPARE(sample.smoothed, sample.value);
    }
}

void TestRunSeries::keepsMemoryPerDeviceKey() {
    RunSeries series;
    series.addPoints(fourSteps());
    // One series per key, in the order of their first points: cuda1 came first.
    QCOMPARE(series.memoryKeys(), (std::vector<std::string>{"mem/cuda1/peak_bytes", "mem/cuda0/allocated_bytes",
                                                            "mem/cuda0/peak_bytes"}));
    const MetricSeries* peak1 = series.seriesOfKey("mem/cuda1/peak_bytes");
    const MetricSeries* allocated0 = series.seriesOfKey("mem/cuda0/allocated_bytes");
    QVERIFY(peak1 && allocated0);
    QCOMPARE(valuesOf(*peak1), (std::vector<double>{2e9 + 1, 2e9 + 2, 2e9 + 3, 2e9 + 4}));
    QCOMPARE(valuesOf(*allocated0), (std::vector<double>(4, 1e9)));
    QVERIFY(!peak1->smoothed());
    // Kinds of memory drawn; a device's free bytes and its utilisation are not memory held.
    QVERIFY(series.keeps("mem/cpu3/host_bytes"));
    QVERIFY(series.keeps("mem/cuda7/reserved_bytes"));
    QVERIFY(series.keeps("mem/cuda7/device_used_bytes"));
    QVERIFY(!series.keeps("mem/cuda0/free_bytes"));
    QVERIFY(!series.keeps("mem/cuda0/utilization_percent"));
    QVERIFY(!series.seriesOfKey("mem/cuda0/free_bytes"));
    // A kept kind has no series before its first point.
    QVERIFY(!series.seriesOfKey("mem/cuda0/reserved_bytes"));
    QCOMPARE(RunSeries::memoryKinds(),
             (std::vector<std::string>{"allocated_bytes", "peak_bytes", "reserved_bytes", "device_used_bytes", "host_bytes"}));
    // The bytes a step moved are kept beside them (drawn in the same row); their rates are not.
    for (const char* key : {"io/to_device_bytes", "io/to_host_bytes", "io/read_bytes", "io/write_bytes"})
        QVERIFY2(series.keeps(key), key);
    QVERIFY(!series.keeps("io/read_gbps"));
    QVERIFY(!series.keeps("io/gathered_bytes"));
}

void TestRunSeries::keepsEvalPointsAtTheirSteps() {
    RunSeries series;
    series.addPoints({point(metric::kLoss, 1, 5.0, 1.0, 100), point(metric::kLoss, 2, 4.0, 2.0, 200)});
    series.addPoints({point(metric::kEvalLoss, 2, 4.5, 2.5, 200)});
    series.addPoints({point(metric::kLoss, 3, 3.0, 3.0, 300), point(metric::kLoss, 4, 2.0, 4.0, 400),
                      point(metric::kEvalLoss, 4, 2.75, 4.5, 400)});
    const auto& eval = series.series(SeriesName::EvalLoss).samples();
    QCOMPARE(eval.size(), size_t{2});
    QCOMPARE(eval[0].step, int64_t{2});
    QCOMPARE(eval[0].value, 4.5);
    QCOMPARE(eval[0].wall, 2.5);
    QCOMPARE(eval[1].step, int64_t{4});
    QCOMPARE(eval[1].value, 2.75);
    QCOMPARE(eval[1].tokens, 400.0);
    // Eval points are not the training loss.
    QCOMPARE(valuesOf(series.series(SeriesName::Loss)), (std::vector<double>{5.0, 4.0, 3.0, 2.0}));
}

void TestRunSeries::ignoresUnknownKeys() {
    RunSeries series;
    const SeriesUpdate update = series.addPoints({point(metric::kStepTime, 1, 0.5), point(metric::kAuxLoss, 1, 0.01),
                                                  point("moe/layer1/expert0/tokens", 1, 10.0),
                                                  point("mem/cuda0/free_bytes", 1, 1e9), point("mem/cuda0", 1, 1.0),
                                                  point("no/such_key", 1, 1.0)});
    QVERIFY(!update.advanced);
    QVERIFY(!update.entropy_floor);
    for (SeriesName name : {SeriesName::Loss, SeriesName::EvalLoss, SeriesName::GradNorm, SeriesName::LearningRate,
                            SeriesName::Throughput})
        QVERIFY(series.series(name).samples().empty());
    QVERIFY(series.memoryKeys().empty());
    QVERIFY(!series.keeps(metric::kStepTime));
    QVERIFY(!series.seriesOfKey("no/such_key"));
    QCOMPARE(series.lastStep(), int64_t{0});
}

void TestRunSeries::placesSamplesOnTheTokenClock() {
    RunSeries series;
    // train/tokens listed after the loss point of its step: the table is read first, so the
    // loss sample sits at the tokens train/tokens says (1000), not at its own count (999).
    series.addPoints({point(metric::kLoss, 1, 4.0, 1.5, 999), point(metric::kTokens, 1, 1000.0, 1.5, 999)});
    // Step 2 has no train/tokens: its own count stands.
    series.addPoints({point(metric::kLoss, 2, 3.0, 3.0, 2001)});
    const auto& loss = series.series(SeriesName::Loss).samples();
    QCOMPARE(loss[0].tokens, 1000.0);
    QCOMPARE(loss[1].tokens, 2001.0);
    QCOMPARE(series.positions().axis(), XAxis::Step);
    QCOMPARE(series.positions().xOf(loss[0]), 1.0);
    series.setAxis(XAxis::Tokens);
    QCOMPARE(series.positions().xOf(loss[0]), 1000.0);
    series.setAxis(XAxis::WallTime);
    QCOMPARE(series.positions().xOf(loss[1]), 3.0);
    // The loss's wall times place events at their steps.
    QCOMPARE(series.positions().markerX(2, std::numeric_limits<double>::quiet_NaN()), 3.0);
    QCOMPARE(sampleX(loss[1], XAxis::Tokens), 2001.0);
    QCOMPARE(series.lastTokens(), 2001.0);
}

void TestRunSeries::entropyFloorAndGlobalBatchAreValues() {
    RunSeries series;
    QVERIFY(std::isnan(series.entropyFloor()));
    QCOMPARE(series.stepSequences(), 0.0);
    // A property of the data, at step 0: no step of the run.
    SeriesUpdate update = series.addPoints({point(metric::kEntropyFloor, 0, 1.234)});
    QVERIFY(update.entropy_floor);
    QVERIFY(!update.advanced);
    QCOMPARE(series.entropyFloor(), 1.234);
    QVERIFY(!series.keeps(metric::kEntropyFloor));
    update = series.addPoints({point(metric::kGlobalBatch, 3, 16.0)});
    QVERIFY(!update.advanced);
    QCOMPARE(series.stepSequences(), 16.0);
    // train/tokens alone moves the run on (its tokens axis) without a series of its own.
    update = series.addPoints({point(metric::kTokens, 5, 640.0, 2.0, 640)});
    QVERIFY(update.advanced);
    QCOMPARE(series.lastStep(), int64_t{5});
    QCOMPARE(series.lastTokens(), 640.0);
}

void TestRunSeries::resmoothsAndClears() {
    RunSeries series(0.5);
    series.addPoints({point(metric::kLoss, 1, 4.0), point(metric::kLoss, 2, 2.0), point(metric::kLoss, 3, 1.0),
                      point(metric::kLearningRate, 1, 3e-3), point(metric::kLearningRate, 2, 1e-3)});
    // w 0.5: 4, 2 / 0.75 = 8/3, 1.5 / 0.875 = 12/7.
    const auto& loss = series.series(SeriesName::Loss).samples();
    QVERIFY(near(loss[1].smoothed, 8.0 / 3.0));
    QVERIFY(near(loss[2].smoothed, 12.0 / 7.0));
    series.setSmoothingWeight(0.0);
    QCOMPARE(series.smoothingWeight(), 0.0);
    for (const SeriesSample& sample : loss) QCOMPARE(sample.smoothed, sample.value);
    series.setSmoothingWeight(0.9);
    const std::vector<double> expected = debiasedEma({4.0, 2.0, 1.0}, 0.9);
    for (size_t i = 0; i < 3; ++i) QVERIFY(near(loss[i].smoothed, expected[i]));
    QCOMPARE(series.series(SeriesName::LearningRate).samples()[1].smoothed, 1e-3);
    // A weight of 1 would freeze the average: clamped below it, as EmaSmoother does.
    series.setSmoothingWeight(1.0);
    QVERIFY(series.smoothingWeight() < 1.0);

    series.addPoints({point("mem/cpu0/peak_bytes", 3, 1e6), point(metric::kEntropyFloor, 0, 0.5)});
    series.clear();
    QVERIFY(series.series(SeriesName::Loss).samples().empty());
    QVERIFY(series.memoryKeys().empty());
    QVERIFY(!series.seriesOfKey("mem/cpu0/peak_bytes"));
    QVERIFY(std::isnan(series.entropyFloor()));
    QCOMPARE(series.lastStep(), int64_t{0});
    // After a clear the EMA starts afresh: the first value comes back unchanged.
    series.setSmoothingWeight(0.5);
    series.addPoints({point(metric::kLoss, 1, 5.0)});
    QCOMPARE(series.series(SeriesName::Loss).samples()[0].smoothed, 5.0);
}

void TestRunSeries::ofKeyKeepsOneKeySmoothed() {
    // Compare draws any stored key, smoothed, each point at its own tokens.
    RunSeries series = RunSeries::ofKey(metric::kTokensPerSecond);
    const SeriesUpdate update =
        series.addPoints(QVector<MetricPoint>{point(metric::kLoss, 1, 4.0, 0.5, 100), point(metric::kTokens, 1, 128.0, 0.5, 100),
                                              point(metric::kTokensPerSecond, 1, 1000.0, 0.5, 100),
                                              point(metric::kTokensPerSecond, 2, 2000.0, 1.0, 200),
                                              point("mem/cuda0/peak_bytes", 2, 1e9, 1.0, 200)});
    QVERIFY(update.advanced);
    QVERIFY(series.keeps(metric::kTokensPerSecond));
    QVERIFY(!series.keeps(metric::kLoss));
    QVERIFY(!series.keeps("mem/cuda0/peak_bytes"));
    QVERIFY(!series.seriesOfKey(metric::kLoss));
    QVERIFY(series.memoryKeys().empty());
    QVERIFY(series.series(SeriesName::Loss).samples().empty());
    const MetricSeries* throughput = series.seriesOfKey(metric::kTokensPerSecond);
    QVERIFY(throughput);
    QVERIFY(throughput->smoothed());
    const auto& samples = throughput->samples();
    QCOMPARE(samples.size(), size_t{2});
    QCOMPARE(samples[0].tokens, 100.0);  // its own count, not train/tokens' 128
    QCOMPARE(samples[1].wall, 1.0);
    QCOMPARE(samples[0].smoothed, 1000.0);
    // (0.6 * 0.4 * 1000 + 0.4 * 2000) / (1 - 0.36) = 1040 / 0.64.
    QVERIFY(near(samples[1].smoothed, 1625.0));
    // Any key, the live plots' value keys included.
    RunSeries floor = RunSeries::ofKey(metric::kEntropyFloor);
    floor.addPoints(QVector<MetricPoint>{point(metric::kEntropyFloor, 0, 1.5)});
    QCOMPARE(floor.seriesOfKey(metric::kEntropyFloor)->samples().size(), size_t{1});
    QVERIFY(std::isnan(floor.entropyFloor()));
}

void TestRunSeries::livePlotsDrawTheirRunSeries() {
    MetricPlots plots;
    plots.addPoints(fourSteps());
    const RunSeries& series = plots.runSeries();
    // The loss graph holds the series' samples at their steps, the EMA graph their EMA.
    const auto& loss = series.series(SeriesName::Loss).samples();
    QCOMPARE(plots.lossRawGraph()->dataCount(), 4);
    QCOMPARE(plots.lossSmoothedGraph()->dataCount(), 4);
    for (int i = 0; i < 4; ++i) {
        QCOMPARE(plots.lossRawGraph()->data()->at(i)->key, static_cast<double>(loss[i].step));
        QCOMPARE(plots.lossRawGraph()->data()->at(i)->value, loss[i].value);
        QCOMPARE(plots.lossSmoothedGraph()->data()->at(i)->value, loss[i].smoothed);
    }
    QCOMPARE(plots.evalLossGraph()->dataCount(), 1);
    QCOMPARE(plots.evalLossGraph()->data()->at(0)->value, 3.25);
    QCOMPARE(plots.learningRateGraph()->data()->at(3)->value, 4e-3);
    QCOMPARE(plots.throughputGraph()->data()->at(0)->value, 501.0);
    // One memory graph per memory series, none for the keys RunSeries ignores.
    QCOMPARE(plots.memoryGraphCount(), static_cast<int>(series.memoryKeys().size()));
    QVERIFY(!plots.memoryGraph(QStringLiteral("mem/cuda0/free_bytes")));
    QCPGraph* peak1 = plots.memoryGraph(QStringLiteral("mem/cuda1/peak_bytes"));
    QVERIFY(peak1);
    QCOMPARE(peak1->data()->at(3)->value, 2e9 + 4);
    // On the tokens axis the graphs read the samples' tokens.
    plots.setXAxis(XAxis::Tokens);
    QCOMPARE(plots.lossRawGraph()->data()->at(3)->key, 1024.0);
    QCOMPARE(plots.runSeries().positions().axis(), XAxis::Tokens);
    // The EMA weight is the series'.
    plots.setSmoothingWeight(0.5);
    QCOMPARE(series.smoothingWeight(), 0.5);
    const std::vector<double> expected = debiasedEma({4.0, 3.0, 2.5, 2.0}, 0.5);
    for (int i = 0; i < 4; ++i) QVERIFY(near(plots.lossSmoothedGraph()->data()->at(i)->value, expected[i]));
}

void TestRunSeries::compareReadsTheSameSeriesAsTheLivePlots() {
    // The live path: the batches as the trainer publishes them.
    RunSeries live;
    const QVector<MetricPoint> points = fourSteps();
    live.addPoints(points);

    // The Compare path: the same points stored, then read back as one run's curve of a key.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    {
        RunStore store(dir.path().toStdString());
        RunRecord run;
        run.run_id = "run-1";
        run.name = "four steps";
        run.created = "2026-01-05T10:00:00Z";
        run.config_json = runConfigToJson(builtinTinyConfig());
        store.createRun(run);
        store.commitBatch("run-1", std::vector<MetricPoint>(points.begin(), points.end()), {});
        store.finishRun("run-1", "completed", 4, 2.0, "");
    }
    CompareRuns compared(dir.path());
    QSignalSpy runs_read(&compared, &CompareRuns::runsRead);
    QVERIFY(compared.setRuns({QStringLiteral("run-1")}));
    QTRY_COMPARE(runs_read.count(), 1);
    QCOMPARE(compared.runs().size(), size_t{1});

    for (const char* key : {metric::kLoss, metric::kGradNorm, "mem/cuda1/peak_bytes"}) {
        QSignalSpy curves_read(&compared, &CompareRuns::curvesRead);
        compared.loadCurves(key);
        QTRY_COMPARE(curves_read.count(), 1);
        QCOMPARE(compared.key(), std::string(key));
        const auto& shown = compared.curveSeries(0).samples();
        const auto& drawn_live = live.seriesOfKey(key)->samples();
        QCOMPARE(shown.size(), drawn_live.size());
        for (size_t i = 0; i < shown.size(); ++i) {
            QCOMPARE(shown[i].step, drawn_live[i].step);
            QCOMPARE(shown[i].tokens, drawn_live[i].tokens);
            QCOMPARE(shown[i].wall, drawn_live[i].wall);
            QCOMPARE(shown[i].value, drawn_live[i].value);
            // Compare smooths every curve; where the live plots do too, the EMA is the same.
            if (live.seriesOfKey(key)->smoothed()) QCOMPARE(shown[i].smoothed, drawn_live[i].smoothed);
        }
        // The curve as stored stays beside its series, for the CSV.
        QCOMPARE(compared.curves()[0].points.size(), shown.size());
    }
    QVERIFY(!compared.isPolling());  // a finished run is read once, not followed
}

// The first multi-token-prediction module's loss has a smoothed series of its own, the deeper
// modules' one each by key, all drawn on the loss plot; a run with modules names train/loss the
// next-token loss in the legend and lists each depth's curve, a run without lists none.
void TestRunSeries::drawsTheMtpLossBesideTheMainLoss() {
    RunSeries series;
    QVector<MetricPoint> points = fourSteps();
    for (int64_t step = 1; step <= 4; ++step) {
        points << point(metric::mtpLossKey(1), step, 5.0 - 0.5 * double(step), 0.5 * double(step), 256 * step);
        points << point(metric::mtpLossKey(2), step, 6.0, 0.5 * double(step), 256 * step);
    }
    series.addPoints(points);
    QCOMPARE(valuesOf(series.series(SeriesName::MtpLoss)), (std::vector<double>{4.5, 4.0, 3.5, 3.0}));
    QVERIFY(series.series(SeriesName::MtpLoss).smoothed());
    QCOMPARE(series.seriesOfKey(metric::mtpLossKey(1)), &series.series(SeriesName::MtpLoss));
    // The second module's by key, smoothed; nothing that only looks like a depth.
    QVERIFY(series.keeps(metric::mtpLossKey(2)));
    QCOMPARE(series.deeperMtpKeys(), std::vector<std::string>{metric::mtpLossKey(2)});
    QCOMPARE(valuesOf(*series.seriesOfKey(metric::mtpLossKey(2))), (std::vector<double>{6.0, 6.0, 6.0, 6.0}));
    QVERIFY(series.seriesOfKey(metric::mtpLossKey(2))->smoothed());
    for (const char* key : {"train/mtp_loss/", "train/mtp_loss/02", "train/mtp_loss/2x", "train/mtp_loss/0"})
        QVERIFY2(!series.keeps(key), key);

    auto legendNames = [](const MetricPlots& plots) {
        QStringList names;
        for (int i = 0; i < plots.legend->itemCount(); ++i)
            if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plots.legend->item(i))) names << item->plottable()->name();
        return names;
    };
    MetricPlots plots;
    RunConfig with;
    with.model.n_mtp_depth = 1;
    plots.resetRun(with);
    plots.addPoints(points);
    QCOMPARE(plots.mtpLossSmoothedGraph()->dataCount(), 4);
    QCOMPARE(plots.mtpLossSmoothedGraph()->data()->at(3)->value, series.series(SeriesName::MtpLoss).samples()[3].smoothed);
    QStringList names = legendNames(plots);
    QVERIFY2(names.contains(QStringLiteral("next-token loss (raw)")), qPrintable(names.join(", ")));
    QVERIFY2(names.contains(QStringLiteral("MTP loss, depth 1 (EMA 0.6)")), qPrintable(names.join(", ")));
    QVERIFY2(names.contains(QStringLiteral("MTP loss, depth 2 (EMA 0.6)")), qPrintable(names.join(", ")));
    QCOMPARE(plots.deeperMtpLossGraph(metric::mtpLossKey(2))->dataCount(), 4);
    plots.setSmoothingWeight(0.5);
    QVERIFY(legendNames(plots).contains(QStringLiteral("MTP loss, depth 2 (EMA 0.5)")));
    QCOMPARE(plots.mtpLossSmoothedGraph()->data()->at(3)->value,
             plots.runSeries().series(SeriesName::MtpLoss).samples()[3].smoothed);
    plots.resetRun(RunConfig{});
    names = legendNames(plots);
    QVERIFY2(names.contains(QStringLiteral("loss (raw)")), qPrintable(names.join(", ")));
    for (const QString& name : names) QVERIFY2(!name.contains(QStringLiteral("MTP")), qPrintable(name));
    QCOMPARE(plots.mtpLossSmoothedGraph()->dataCount(), 0);
    QVERIFY(!plots.deeperMtpLossGraph(metric::mtpLossKey(2)));
}

QTEST_MAIN(TestRunSeries)
#include "test_run_series.moc"
