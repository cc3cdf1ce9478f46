// Tests the critical batch plot: estimates and their band on a log axis, B as a step line, hidden
// until the first estimate, and the title naming the newest one.
#include <QTest>

#include "monitor/critical_batch_plot.h"
#include "monitor/monitor_view.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

MetricPoint point(int64_t step, const char* key, double value) { return MetricPoint{step, step * 1024, 0.1 * step, key, value}; }

}  // namespace

class TestCriticalBatchPlot : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void drawsTheEstimateItsBandAndTheGlobalBatch() {
        CriticalBatchPlot plot;
        QVERIFY(!plot.hasData());
        QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLogarithmic);
        // Step 1 has no estimate yet (0: not drawn on a log axis); the error of step 3 comes in a
        // later batch than its estimate.
        plot.addPoints({point(1, "train/global_batch", 16), point(1, "noise/critical_batch_sequences", 0)});
        QVERIFY(!plot.hasData());
        plot.addPoints({point(2, "noise/critical_batch_rel_error", 0.5), point(2, "noise/critical_batch_sequences", 8),
                        point(2, "train/global_batch", 16), point(3, "noise/critical_batch_sequences", 40)});
        plot.addPoints({point(3, "noise/critical_batch_rel_error", 0.25)});
        QCOMPARE(plot.criticalGraph()->dataCount(), 2);
        QCOMPARE(plot.globalBatchGraph()->dataCount(), 2);
        QCOMPARE(plot.globalBatchGraph()->lineStyle(), QCPGraph::lsStepLeft);
        QCOMPARE(plot.bandLowGraph()->dataCount(), 2);
        QCOMPARE(plot.bandHighGraph()->data()->at(0)->value, 12.0);  // 8 x 1.5
        QCOMPARE(plot.bandLowGraph()->data()->at(0)->value, 4.0);    // 8 x 0.5
        QCOMPARE(plot.bandHighGraph()->data()->at(1)->value, 50.0);  // 40 x 1.25
        QCOMPARE(plot.summary(), QStringLiteral("Critical batch ~40 sequences at step 3 (± 25 %) · B 16"));
        plot.resize(600, 200);
        plot.flushReplot();
        QVERIFY(plot.yAxis->range().lower < 4.0 && plot.yAxis->range().upper > 50.0);
        // Ticks at 1-2-5 times powers of ten over the range, however narrow.
        QVector<double> ticks;
        QVector<QString> labels;
        plot.yAxis->ticker()->generate(plot.yAxis->range(), QLocale::c(), QLatin1Char('g'), 4, ticks, nullptr, &labels);
        QVERIFY2(ticks.contains(5.0) && ticks.contains(10.0) && ticks.contains(20.0) && !ticks.contains(25.0),
                 qPrintable(QStringList(labels.begin(), labels.end()).join(' ')));
        plot.reset();
        QVERIFY(!plot.hasData());
    }

    void theViewShowsItOnlyOnceThereIsAnEstimate() {
        MonitorView view;
        view.resize(1000, 800);
        view.show();
        QVERIFY(view.criticalBatchPlot()->isHidden());
        view.addPoints({point(1, "train/global_batch", 16), point(1, "train/loss", 3.0)});
        QVERIFY(view.criticalBatchPlot()->isHidden());
        view.addPoints({point(2, "noise/critical_batch_sequences", 20)});
        QVERIFY(!view.criticalBatchPlot()->isHidden());
    }
};

QTEST_MAIN(TestCriticalBatchPlot)
#include "test_critical_batch_plot.moc"
