// Tests the min/max pyramid against brute force over the raw points, and the decimated graph
// that feeds QCustomPlot from it as the view changes.
#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include <QTest>

#include "plotting/decimated_graph.h"
#include "plotting/live_decimation.h"
#include "plotting/min_max_pyramid.h"

using trainbench::gui::CurvePoint;
using trainbench::gui::DecimatedGraph;
using trainbench::gui::LiveDecimation;
using trainbench::gui::MinMaxPyramid;

namespace {

// A noisy falling loss over steps 1..n, with a few spikes.
std::pair<std::vector<double>, std::vector<double>> noisyCurve(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.05);
    std::vector<double> xs(n), ys(n);
    for (size_t i = 0; i < n; ++i) {
        xs[i] = double(i + 1);
        ys[i] = 2.0 + 3.0 / std::sqrt(double(i + 1)) + noise(rng) + (rng() % 50'000 == 0 ? 4.0 : 0.0);
    }
    return {xs, ys};
}

bool contains(const std::vector<CurvePoint>& points, double x, double y) {
    return std::any_of(points.begin(), points.end(), [&](const CurvePoint& p) { return p.x == x && p.y == y; });
}

}  // namespace

class TestMinMaxPyramid : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Few points in view: all of them, plus the nearest one outside on each side.
    void aShortViewGetsEveryPoint() {
        auto [xs, ys] = noisyCurve(10'000, 1);
        MinMaxPyramid pyramid(xs, ys);
        int level = -1;
        const auto points = pyramid.visible(100.0, 1'099.0, 200, &level);
        QCOMPARE(level, 0);
        QCOMPARE(points.size(), size_t(1'000 + 2));
        for (size_t i = 0; i < points.size(); ++i) {
            QCOMPARE(points[i].x, xs[98 + i]);  // x = 99 is index 98
            QCOMPARE(points[i].y, ys[98 + i]);
        }
    }

    // A million points at 1,000 columns: at most about 8 points a column, in x order, the ends kept,
    // and every block's lowest and highest point (found here by scanning the raw points).
    void aLongViewKeepsEveryBlocksExtremes() {
        auto [xs, ys] = noisyCurve(1'000'000, 2);
        MinMaxPyramid pyramid(xs, ys);
        for (const auto& [lower, upper] : std::vector<std::pair<double, double>>{{1, 1e6}, {123'456.5, 654'321.5}}) {
            int level = 0;
            const auto points = pyramid.visible(lower, upper, 1'000, &level);
            QVERIFY(level >= 3);
            QVERIFY2(points.size() <= 8 * 1'000 + 8, std::to_string(points.size()).c_str());
            QVERIFY(std::is_sorted(points.begin(), points.end(),
                                   [](const CurvePoint& a, const CurvePoint& b) { return a.x < b.x; }));
            const size_t first = size_t(std::lower_bound(xs.begin(), xs.end(), lower) - xs.begin()) - (lower > 1 ? 1 : 0);
            const size_t last = std::min(xs.size() - 1, size_t(std::upper_bound(xs.begin(), xs.end(), upper) - xs.begin()));
            QCOMPARE(points.front().x, xs[first]);
            QCOMPARE(points.back().x, xs[last]);
            const size_t block = size_t(1) << level;
            size_t checked = 0;
            for (size_t start = (first / block + 1) * block; start + block <= last; start += block) {
                const auto begin = ys.begin() + long(start), end = begin + long(block);
                const size_t low = size_t(std::min_element(begin, end) - ys.begin());
                const size_t high = size_t(std::max_element(begin, end) - ys.begin());
                QVERIFY(contains(points, xs[low], ys[low]));
                QVERIFY(contains(points, xs[high], ys[high]));
                ++checked;
            }
            QVERIFY(checked >= 400);
            // The drawn extremes are the curve's extremes over the view.
            double low = points.front().y, high = points.front().y;
            for (const CurvePoint& p : points) low = std::min(low, p.y), high = std::max(high, p.y);
            QCOMPARE(low, *std::min_element(ys.begin() + long(first), ys.begin() + long(last) + 1));
            QCOMPARE(high, *std::max_element(ys.begin() + long(first), ys.begin() + long(last) + 1));
        }
    }

    // A stretch of non-finite values stays a gap (a NaN point), whatever the level.
    void aGapStaysAGap() {
        auto [xs, ys] = noisyCurve(100'000, 3);
        for (size_t i = 50'000; i < 52'000; ++i) ys[i] = std::nan("");
        MinMaxPyramid pyramid(xs, ys);
        const auto points = pyramid.visible(1, 1e5, 200);
        const bool gap = std::any_of(points.begin(), points.end(), [](const CurvePoint& p) {
            return std::isnan(p.y) && p.x >= 50'001 && p.x <= 52'000;
        });
        QVERIFY(gap);
        for (const CurvePoint& p : points)
            if (p.x < 50'001 || p.x > 52'000) QVERIFY(std::isfinite(p.y));
    }

    void emptyAndSinglePointCurves() {
        QVERIFY(MinMaxPyramid({}, {}).visible(0, 1, 100).empty());
        const auto one = MinMaxPyramid({5.0}, {2.0}).visible(0, 10, 100);
        QCOMPARE(one.size(), size_t(1));
        QCOMPARE(one[0].y, 2.0);
    }

    // A pyramid grown a point at a time answers every view as one built from the whole curve
    // (whose blocks the test above checks against a scan), at every length on the way: one
    // point, a block's end, a level's end, a gap.
    void appendingBuildsThePyramidOfTheWholeCurve() {
        auto [xs, ys] = noisyCurve(70'000, 5);
        for (size_t i = 30'000; i < 30'100; ++i) ys[i] = std::nan("");
        MinMaxPyramid grown({}, {});
        for (size_t n = 1; n <= xs.size(); ++n) {
            grown.append(xs[n - 1], ys[n - 1]);
            const bool check = n <= 80 || n % 4'096 == 0 || n % 4'096 == 1 || n == 30'050 || n == xs.size();
            if (!check) continue;
            const MinMaxPyramid built(std::vector<double>(xs.begin(), xs.begin() + long(n)),
                                      std::vector<double>(ys.begin(), ys.begin() + long(n)));
            QCOMPARE(grown.size(), n);
            for (const auto& [lower, upper, columns] : std::vector<std::tuple<double, double, int>>{
                     {0, 1e9, 7}, {0, 1e9, 300}, {double(n) / 3, double(n) * 2 / 3, 50}}) {
                int grown_level = -1, built_level = -2;
                const auto a = grown.visible(lower, upper, columns, &grown_level);
                const auto b = built.visible(lower, upper, columns, &built_level);
                QCOMPARE(grown_level, built_level);
                QCOMPARE(a.size(), b.size());
                for (size_t i = 0; i < a.size(); ++i) {
                    QCOMPARE(a[i].x, b[i].x);
                    QVERIFY(a[i].y == b[i].y || (std::isnan(a[i].y) && std::isnan(b[i].y)));
                }
            }
        }
    }

    // A live graph keeps every point; only while it is drawn does it hold the pyramid's view
    // (the extremes kept, a 1 px pen), and it follows points added between redraws.
    void aLiveGraphIsDrawnThroughItsPyramid() {
        QCustomPlot plot;
        plot.resize(1'000, 600);
        QCPGraph* graph = plot.addGraph();
        graph->setPen(QPen(Qt::blue, 2.2));
        LiveDecimation drawn(graph);
        QObject::connect(&plot, &QCustomPlot::beforeReplot, [&] { drawn.beginDraw(); });
        QObject::connect(&plot, &QCustomPlot::afterReplot, [&] { drawn.endDraw(); });
        int drawn_points = -1;
        double drawn_high = 0, drawn_pen = 0;
        QObject::connect(&plot, &QCustomPlot::afterLayout, [&] {
            drawn_points = graph->dataCount();
            drawn_pen = graph->pen().widthF();
            drawn_high = -1e300;
            for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
                drawn_high = std::max(drawn_high, it->value);
        });
        auto [xs, ys] = noisyCurve(300'000, 6);
        for (size_t i = 0; i < 200'000; ++i) graph->addData(xs[i], ys[i]);
        plot.xAxis->setRange(0, 300'000);
        plot.replot();
        QVERIFY2(drawn_points > 0 && drawn_points < 10'000, std::to_string(drawn_points).c_str());
        QCOMPARE(drawn_pen, 1.0);
        QCOMPARE(drawn_high, *std::max_element(ys.begin(), ys.begin() + 200'000));
        QCOMPARE(graph->dataCount(), 200'000);
        QCOMPARE(graph->pen().widthF(), 2.2);
        // New points, one a spike: the next draw has it.
        for (size_t i = 200'000; i < 300'000; ++i) graph->addData(xs[i], i == 250'000 ? 100.0 : ys[i]);
        plot.replot();
        QCOMPARE(drawn_high, 100.0);
        QCOMPARE(graph->dataCount(), 300'000);
        // A curve that runs one way (a schedule) is no band: it keeps its pen (and dashes).
        QCPGraph* smooth = plot.addGraph();
        smooth->setPen(QPen(Qt::red, 1.8, Qt::DashLine));
        LiveDecimation smooth_drawn(smooth);
        double smooth_pen = 0;
        int smooth_points = -1;
        QObject::connect(&plot, &QCustomPlot::beforeReplot, [&] { smooth_drawn.beginDraw(); });
        QObject::connect(&plot, &QCustomPlot::afterReplot, [&] { smooth_drawn.endDraw(); });
        QObject::connect(&plot, &QCustomPlot::afterLayout, [&] {
            smooth_pen = smooth->pen().widthF();
            smooth_points = smooth->dataCount();
        });
        for (size_t i = 0; i < 300'000; ++i) smooth->addData(xs[i], 1e-3 * std::cos(double(i) / 1e5));
        plot.replot();
        QVERIFY(smooth_points > 0 && smooth_points < 10'000);
        QCOMPARE(smooth_pen, 1.8);
        QVERIFY(LiveDecimation::isBand({{0, 0}, {1, 1}, {2, 0}, {3, 1}, {4, 0}}));
        QVERIFY(!LiveDecimation::isBand({{0, 0}, {1, 1}, {2, 2}, {3, 2.5}, {4, 2.4}, {5, 3}, {6, 4}, {7, 5}, {8, 6}}));

        // Data replaced (another x axis): read again once told.
        graph->data()->clear();
        for (size_t i = 0; i < 1'000; ++i) graph->addData(xs[i], ys[i]);
        drawn.invalidate();
        plot.replot();
        QCOMPARE(drawn_points, 1'000);  // few enough: drawn as they are
        QCOMPARE(drawn_pen, 2.2);
    }

    // The graph holds the whole curve's outline at first (axes rescale to its true extent),
    // and after a zoom and a redraw only the view, exactly, once few points are in it.
    void theGraphFollowsTheView() {
        QCustomPlot plot;
        plot.resize(1'000, 600);
        auto [xs, ys] = noisyCurve(1'000'000, 4);
        DecimatedGraph decimated(plot.addGraph(), xs, ys);
        QObject::connect(&plot, &QCustomPlot::beforeReplot, [&] { decimated.refresh(); });
        QCPGraph* graph = decimated.graph();
        QVERIFY(graph->dataCount() < 10'000);
        plot.rescaleAxes();
        QCOMPARE(plot.xAxis->range().lower, 1.0);
        QCOMPARE(plot.xAxis->range().upper, 1e6);
        QCOMPARE(plot.yAxis->range().upper, *std::max_element(ys.begin(), ys.end()));
        plot.replot();
        QVERIFY(graph->dataCount() < 10'000);
        plot.xAxis->setRange(400'000, 400'300);
        plot.replot();
        QCOMPARE(graph->dataCount(), 301 + 2);
        QCOMPARE(graph->data()->at(1)->key, 400'000.0);
        QCOMPARE(graph->data()->at(1)->value, ys[399'999]);
    }
};

QTEST_MAIN(TestMinMaxPyramid)
#include "test_min_max_pyramid.moc"
