// Tests CoalescedReplot: a burst of requests draws once, a later request draws again, flush draws now.
#include <QSignalSpy>
#include <QTest>
#include <qcustomplot.h>

#include "plotting/coalesced_replot.h"

using trainbench::gui::CoalescedReplot;

namespace {

// Far longer than one interval: a redraw that is due has come by then on a loaded machine.
constexpr int kWaitMs = 5000;
// Several intervals: long enough for a second, unwanted redraw to show up.
constexpr int kSettleMs = 4 * CoalescedReplot::kIntervalMs;

// A new QCustomPlot queues a redraw of its own; it is drawn before counting starts.
void settle() { QTest::qWait(kSettleMs); }

}  // namespace

class TestCoalescedReplot : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aBurstDrawsOnce_data();
    void aBurstDrawsOnce();
    void aLaterRequestDrawsAgain();
    void theRedrawCallbackDrawsInsteadOfTheDefault();
    void flushDrawsNowAndDropsThePendingRedraw();
    void theIntervalGrowsWithSlowRedraws();
};

void TestCoalescedReplot::aBurstDrawsOnce_data() {
    QTest::addColumn<bool>("paced");
    QTest::newRow("fixed interval") << false;
    QTest::newRow("paced") << true;
}

void TestCoalescedReplot::aBurstDrawsOnce() {
    QFETCH(bool, paced);
    QCustomPlot plot;
    auto* replot = new CoalescedReplot(&plot);
    replot->setPaced(paced);
    settle();
    QSignalSpy drawn(&plot, &QCustomPlot::afterReplot);

    for (int i = 0; i < 100; ++i) replot->request();
    replot->requestSoon();
    for (int i = 0; i < 100; ++i) replot->request();
    // Nothing is drawn inside the burst itself: only once control returns to the event loop.
    QCOMPARE(drawn.count(), 0);
    QVERIFY(replot->pending());

    QVERIFY(drawn.wait(kWaitMs));
    QCOMPARE(drawn.count(), 1);
    QVERIFY(!replot->pending());
    QTest::qWait(kSettleMs);
    QCOMPARE(drawn.count(), 1);
}

void TestCoalescedReplot::aLaterRequestDrawsAgain() {
    QCustomPlot plot;
    auto* replot = new CoalescedReplot(&plot);
    settle();
    QSignalSpy drawn(&plot, &QCustomPlot::afterReplot);

    replot->request();
    QVERIFY(drawn.wait(kWaitMs));
    QCOMPARE(drawn.count(), 1);

    replot->request();
    replot->request();
    QVERIFY(replot->pending());
    QVERIFY(drawn.wait(kWaitMs));
    QCOMPARE(drawn.count(), 2);
    QTest::qWait(kSettleMs);
    QCOMPARE(drawn.count(), 2);
}

void TestCoalescedReplot::theRedrawCallbackDrawsInsteadOfTheDefault() {
    QCustomPlot plot;
    int redraws = 0;
    auto* replot = new CoalescedReplot(&plot, [&redraws] { ++redraws; });
    settle();
    QSignalSpy drawn(&plot, &QCustomPlot::afterReplot);

    for (int i = 0; i < 50; ++i) replot->request();
    QTRY_COMPARE_WITH_TIMEOUT(redraws, 1, kWaitMs);
    QTest::qWait(kSettleMs);
    QCOMPARE(redraws, 1);
    // The callback decides what is drawn: it did not call replot(), so the plot was not.
    QCOMPARE(drawn.count(), 0);
}

void TestCoalescedReplot::flushDrawsNowAndDropsThePendingRedraw() {
    QCustomPlot plot;
    auto* replot = new CoalescedReplot(&plot);
    settle();
    QSignalSpy drawn(&plot, &QCustomPlot::afterReplot);

    replot->request();
    replot->flush();
    QCOMPARE(drawn.count(), 1);
    QVERIFY(!replot->pending());
    QTest::qWait(kSettleMs);
    QCOMPARE(drawn.count(), 1);

    // Nothing pending: a flush still draws (the caller wants the picture now).
    replot->flush();
    QCOMPARE(drawn.count(), 2);
}

void TestCoalescedReplot::theIntervalGrowsWithSlowRedraws() {
    QCOMPARE(CoalescedReplot::intervalAfter(0.0), CoalescedReplot::kIntervalMs);
    QCOMPARE(CoalescedReplot::intervalAfter(-1.0), CoalescedReplot::kIntervalMs);
    QCOMPARE(CoalescedReplot::intervalAfter(5.0), 33);
    QCOMPARE(CoalescedReplot::intervalAfter(11.5), 35);  // ceil(34.5)
    QCOMPARE(CoalescedReplot::intervalAfter(140.0), 420);
    QCOMPARE(CoalescedReplot::intervalAfter(2000.0), CoalescedReplot::kMaxIntervalMs);

    // Unpaced, the interval never moves from its base, whatever a redraw takes.
    QCustomPlot plot;
    auto* replot = new CoalescedReplot(&plot);
    replot->flush();
    QCOMPARE(replot->intervalMs(), CoalescedReplot::kIntervalMs);
}

QTEST_MAIN(TestCoalescedReplot)
#include "test_coalesced_replot.moc"
