// Tests the expert-load heatmap: cells equal the fed loads, per-layer max and mean, newest step wins.
#include <cmath>

#include <QSignalSpy>
#include <QTest>

#include "monitor/expert_load_heatmap.h"
#include "trainbench/metric_point.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

MetricPoint load(int64_t step, int layer, int expert, double tokens) {
    MetricPoint p;
    p.step = step;
    p.key = "moe/layer" + std::to_string(layer) + "/expert" + std::to_string(expert) + "/tokens";
    p.value = tokens;
    return p;
}

}  // namespace

class TestExpertLoadHeatmap : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cellsEqualFedLoads();
    void expertParallelismNamesWhoHoldsWhich();
    void newestStepReplacesOlder();
    void ratioOnlyLayers();
    void ignoresOtherKeys();
    void aSingleLayerIsDrawnInColour();
    void multiTokenPredictionRowsAreNamed();
};

// A model of 2 layers with one multi-token-prediction module: its MoE block reports as layer 2
// (its published number) and its row is labelled "MTP 1"; the main model's keep "layer L".
void TestExpertLoadHeatmap::multiTokenPredictionRowsAreNamed() {
    ExpertLoadHeatmap heatmap;
    heatmap.setMainLayers(2);
    QVector<MetricPoint> points;
    for (int layer : {1, 2})
        for (int e = 0; e < 4; ++e) points << load(3, layer, e, 100.0 + layer);
    heatmap.addPoints(points);
    heatmap.flushReplot();
    QCOMPARE(heatmap.layerLabel(1), QStringLiteral("layer 1"));
    QCOMPARE(heatmap.layerLabel(2), QStringLiteral("MTP 1"));
    QCOMPARE(heatmap.layerLabel(3), QStringLiteral("MTP 2"));
    auto ticker = heatmap.axisRect()->axis(QCPAxis::atLeft)->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    QCOMPARE(ticker->ticks().values(), (QList<QString>{QStringLiteral("layer 1"), QStringLiteral("MTP 1")}));
    heatmap.setMainLayers(0);
    QCOMPARE(heatmap.layerLabel(2), QStringLiteral("layer 2"));
}

// One MoE layer (the tiny preset): the cells are painted, not left blank. Equal loads map to
// one colour of the scale, far from the white background.
void TestExpertLoadHeatmap::aSingleLayerIsDrawnInColour() {
    ExpertLoadHeatmap heatmap;
    heatmap.resize(800, 200);
    QVector<MetricPoint> points;
    for (int e = 0; e < 4; ++e) points << load(3, 1, e, 256);
    heatmap.addPoints(points);
    heatmap.flushReplot();
    QCOMPARE(heatmap.cellLoad(1, 2), 256.0);
    const QImage image = heatmap.grab().toImage();
    QCPAxisRect* rect = heatmap.axisRect();
    const QPoint centre(rect->axis(QCPAxis::atBottom)->coordToPixel(1.3),
                        rect->axis(QCPAxis::atLeft)->coordToPixel(0.25));
    const QColor colour = image.pixelColor(centre * image.devicePixelRatio());
    QVERIFY2(colour.lightness() < 230, qPrintable(colour.name()));
}

// EP 2 over 8 experts: a line between experts 3 and 4, the title says which EP rank holds which
// and what each of the four ranks received in the newest step.
void TestExpertLoadHeatmap::expertParallelismNamesWhoHoldsWhich() {
    ExpertLoadHeatmap heatmap;
    heatmap.setExpertParallel(2);
    QVector<MetricPoint> points;
    for (int e = 0; e < 8; ++e) points << load(3, 1, e, 10.0 * (e + 1));
    for (int r = 0; r < 4; ++r) {
        MetricPoint p;
        p.step = 3;
        p.key = "moe/rank" + std::to_string(r) + "/tokens_received";
        p.value = 1000.0 + r;
        points << p;
    }
    heatmap.addPoints(points);
    heatmap.flushReplot();
    QCOMPARE(heatmap.rankReceived(2), 1002.0);
    QVERIFY(std::isnan(heatmap.rankReceived(4)));
    const QString title = heatmap.titleText();
    QVERIFY2(title.contains(QStringLiteral("EP 2 (EP rank 0: 0–3, EP rank 1: 4–7)")), qPrintable(title));
    QVERIFY2(title.contains(QStringLiteral("routed tokens received: rank 0 1k · rank 1 1k")), qPrintable(title));
    auto lines = [&] {
        int count = 0;
        for (int i = 0; i < heatmap.itemCount(); ++i) count += qobject_cast<QCPItemStraightLine*>(heatmap.item(i)) ? 1 : 0;
        return count;
    };
    QCOMPARE(lines(), 1);
    heatmap.setExpertParallel(1);
    heatmap.flushReplot();
    QVERIFY(!heatmap.titleText().contains(QStringLiteral("EP")));
    QCOMPARE(lines(), 0);
}

void TestExpertLoadHeatmap::cellsEqualFedLoads() {
    ExpertLoadHeatmap heatmap;
    QSignalSpy started(&heatmap, &ExpertLoadHeatmap::dataStarted);
    const QVector<double> layer1 = {100, 200, 300, 400, 500, 600, 700, 1200};
    const QVector<double> layer2 = {50, 50, 50, 50, 50, 50, 50, 50};
    QVector<MetricPoint> points;
    for (int e = 0; e < 8; ++e) points << load(7, 1, e, layer1[e]) << load(7, 2, e, layer2[e]);
    heatmap.addPoints(points);
    QCOMPARE(started.count(), 1);
    heatmap.flushReplot();

    QVERIFY(heatmap.hasData());
    QCOMPARE(heatmap.layers(), (QList<int>{1, 2}));
    QCOMPARE(heatmap.expertCount(), 8);
    QCOMPARE(heatmap.step(), int64_t(7));
    QCOMPARE(heatmap.colorMap()->data()->keySize(), 8);
    QCOMPARE(heatmap.colorMap()->data()->valueSize(), 2);
    for (int e = 0; e < 8; ++e) {
        QCOMPARE(heatmap.cellLoad(1, e), layer1[e]);
        QCOMPARE(heatmap.cellLoad(2, e), layer2[e]);
    }
    QVERIFY(std::isnan(heatmap.cellLoad(3, 0)));
    QCOMPARE(heatmap.layerMax(1), 1200.0);
    QCOMPARE(heatmap.layerMean(1), 500.0);
    QCOMPARE(heatmap.layerMax(2), 50.0);
    QCOMPARE(heatmap.layerMean(2), 50.0);
    QCOMPARE(heatmap.layerSummary(1), QStringLiteral("max 1.2k · mean 500 · 2.40×"));
    QCOMPARE(heatmap.layerSummary(2), QStringLiteral("max 50 · mean 50 · 1.00×"));
    // The colour scale spans zero to the busiest expert.
    QCOMPARE(heatmap.colorMap()->dataRange().upper, 1200.0);
    QCOMPARE(heatmap.colorMap()->dataRange().lower, 0.0);
}

void TestExpertLoadHeatmap::newestStepReplacesOlder() {
    ExpertLoadHeatmap heatmap;
    heatmap.setLayerLoads(3, 10, {10, 20, 30, 40});
    heatmap.addPoints({load(11, 3, 0, 25), load(11, 3, 1, 25), load(11, 3, 2, 25), load(11, 3, 3, 25)});
    heatmap.addPoints({load(9, 3, 0, 999)});  // late point of an older step
    heatmap.flushReplot();
    for (int e = 0; e < 4; ++e) QCOMPARE(heatmap.cellLoad(3, e), 25.0);
    QCOMPARE(heatmap.step(), int64_t(11));
    heatmap.reset();
    QVERIFY(!heatmap.hasData());
    heatmap.flushReplot();
    QVERIFY(std::isnan(heatmap.cellLoad(3, 0)));
}

void TestExpertLoadHeatmap::ratioOnlyLayers() {
    ExpertLoadHeatmap heatmap;
    MetricPoint ratio;
    ratio.step = 4;
    ratio.key = "moe/layer1/load_max_over_mean";
    ratio.value = 1.625;
    heatmap.addPoints({ratio});
    heatmap.flushReplot();
    QVERIFY(heatmap.hasData());
    QCOMPARE(heatmap.expertCount(), 0);
    QCOMPARE(heatmap.layerSummary(1), QStringLiteral("max/mean 1.63×"));
}

void TestExpertLoadHeatmap::ignoresOtherKeys() {
    ExpertLoadHeatmap heatmap;
    MetricPoint other;
    other.step = 1;
    for (const char* key : {"moe/aux_loss", "moe/layer1/expert/tokens", "moe/layerX/expert1/tokens",
                            "moe/layer1/expert2/tokens_extra", "train/loss"}) {
        other.key = key;
        heatmap.addPoints({other});
    }
    QVERIFY(!heatmap.hasData());
}

QTEST_MAIN(TestExpertLoadHeatmap)
#include "test_expert_load_heatmap.moc"
