// Tests the live plots' data without a widget: stored values, their EMA, and each sample's x on every axis, against hand-computed numbers.
#include <cmath>
#include <limits>

#include <QTest>

#include "metric_points.h"
#include "runs/metric_series.h"
#include "runs/step_positions.h"
#include "trainbench/metric_keys.h"

using namespace trainbench;
using namespace trainbench::gui;

class TestMetricSeries : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void storesValuesAndTheirEma();
    void keepsANonFiniteValueAsAGap();
    void resmoothsTheFullSeries();
    void unsmoothedSeriesKeepsValues();
    void placesSamplesOnEachAxis();
    void placesMarkersBetweenTabledSteps();
};

void TestMetricSeries::storesValuesAndTheirEma() {
    MetricSeries series(/*smoothed=*/true, /*smoothing_weight=*/0.5);
    series.append(point(metric::kLoss, 1, 4.0, 0.5), 100.0);
    series.append(point(metric::kLoss, 2, 2.0, 1.0), 200.0);
    series.append(point(metric::kLoss, 3, 1.0, 1.5), 300.0);
    const auto& samples = series.samples();
    QCOMPARE(samples.size(), size_t(3));
    QCOMPARE(samples[0].step, int64_t(1));
    QCOMPARE(samples[1].tokens, 200.0);
    QCOMPARE(samples[2].wall, 1.5);
    QCOMPARE(samples[2].value, 1.0);
    // Debiased EMA, w = 0.5: last = w last + (1 - w) x, smoothed = last / (1 - w^n).
    // last = 2, 2, 1.5 -> 2 / 0.5 = 4, 2 / 0.75 = 8/3, 1.5 / 0.875 = 12/7.
    QCOMPARE(samples[0].smoothed, 4.0);
    QCOMPARE(samples[1].smoothed, 8.0 / 3.0);
    QCOMPARE(samples[2].smoothed, 12.0 / 7.0);
}

void TestMetricSeries::keepsANonFiniteValueAsAGap() {
    MetricSeries series(true, 0.5);
    series.append(point(metric::kLoss, 1, 4.0), 0.0);
    series.append(point(metric::kLoss, 2, std::numeric_limits<double>::infinity()), 0.0);
    series.append(point(metric::kLoss, 3, 2.0), 0.0);
    const auto& samples = series.samples();
    QVERIFY(std::isnan(samples[1].value));
    QVERIFY(std::isnan(samples[1].smoothed));
    // The gap leaves the smoother alone: the third point is the second it takes in,
    // last = 0.5 * 2 + 0.5 * 2 = 2, smoothed 2 / (1 - 0.25) = 8/3.
    QCOMPARE(samples[2].smoothed, 8.0 / 3.0);
}

void TestMetricSeries::resmoothsTheFullSeries() {
    MetricSeries series(true, 0.5);
    for (int step = 1; step <= 3; ++step) series.append(point(metric::kLoss, step, 6.0 / step), 0.0);
    series.setSmoothingWeight(0.0);  // no smoothing: every smoothed value is its raw value
    for (const SeriesSample& sample : series.samples()) QCOMPARE(sample.smoothed, sample.value);
    series.clear();
    QVERIFY(series.samples().empty());
    // After a clear the smoother starts afresh: the first value comes back unchanged.
    QCOMPARE(series.append(point(metric::kLoss, 1, 5.0), 0.0).smoothed, 5.0);
}

void TestMetricSeries::unsmoothedSeriesKeepsValues() {
    MetricSeries series(/*smoothed=*/false);
    series.append(point(metric::kLearningRate, 1, 3e-3), 0.0);
    series.append(point(metric::kLearningRate, 2, 1e-3), 0.0);
    series.setSmoothingWeight(0.9);
    QCOMPARE(series.samples()[1].smoothed, 1e-3);
}

void TestMetricSeries::placesSamplesOnEachAxis() {
    StepPositions positions;
    // train/tokens of steps 1 and 2 arrive in the same batch as the loss points.
    positions.noteTokens({point(metric::kLoss, 1, 4.0), point(metric::kTokens, 1, 1024.0),
                          point(metric::kTokens, 2, 2048.0)});
    QCOMPARE(positions.tokensAt(1, -1.0), 1024.0);
    QCOMPARE(positions.tokensAt(2, -1.0), 2048.0);
    QCOMPARE(positions.tokensAt(3, -1.0), -1.0);  // not tabled: the point's own count
    QCOMPARE(positions.tokensAt(0, -1.0), -1.0);  // a hole in the table

    MetricSeries series(false);
    const SeriesSample& sample = series.append(point(metric::kLoss, 2, 3.0, 12.5, 999), positions.tokensAt(2, 999.0));
    QCOMPARE(positions.axis(), XAxis::Step);
    QCOMPARE(positions.xOf(sample), 2.0);
    positions.setAxis(XAxis::Tokens);
    QCOMPARE(positions.xOf(sample), 2048.0);
    positions.setAxis(XAxis::WallTime);
    QCOMPARE(positions.xOf(sample), 12.5);
}

void TestMetricSeries::placesMarkersBetweenTabledSteps() {
    StepPositions positions;
    positions.noteTokens({point(metric::kTokens, 4, 4000.0)});
    positions.noteWall(4, 8.0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    QCOMPARE(positions.markerX(6, nan), 6.0);
    positions.setAxis(XAxis::Tokens);
    QCOMPARE(positions.markerX(4, nan), 4000.0);
    // Step 6 is not tabled: step 4's tokens scaled by 6 / 4.
    QCOMPARE(positions.markerX(6, nan), 6000.0);
    QVERIFY(std::isnan(positions.markerX(2, nan)));  // nothing tabled at or before step 2
    positions.setAxis(XAxis::WallTime);
    QCOMPARE(positions.markerX(4, 9.5), 9.5);  // the event's own wall time first
    QCOMPARE(positions.markerX(4, nan), 8.0);  // else its step's
    QVERIFY(std::isnan(positions.markerX(5, nan)));
    positions.clear();
    QCOMPARE(positions.tokensAt(4, -1.0), -1.0);
}

QTEST_MAIN(TestMetricSeries)
#include "test_metric_series.moc"
