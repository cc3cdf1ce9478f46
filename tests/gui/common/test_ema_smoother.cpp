// Tests EmaSmoother against TensorBoard's debiased EMA, worked out by hand for short series.
#include <cmath>
#include <limits>

#include <QTest>
#include <QVector>

#include "common/ema_smoother.h"

using trainbench::gui::EmaSmoother;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Both non-finite of the same kind, or equal to 1e-12 relative.
bool sameValue(double actual, double expected) {
    if (std::isnan(expected)) return std::isnan(actual);
    if (std::isinf(expected)) return actual == expected;
    return std::abs(actual - expected) <= 1e-12 * std::max(1.0, std::abs(expected));
}

}  // namespace

class TestEmaSmoother : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesTensorBoardFormula_data();
    void matchesTensorBoardFormula();
    void zeroWeightLeavesSeriesUnchanged();
    void resetStartsOver();
    void outOfRangeWeightIsClamped();
};

void TestEmaSmoother::matchesTensorBoardFormula_data() {
    QTest::addColumn<double>("weight");
    QTest::addColumn<QVector<double>>("input");
    QTest::addColumn<QVector<double>>("expected");
    QTest::addColumn<long>("finite_count");

    // w = 0.6, last starts at 0:
    //   y=1: last = 0.4             ; / (1 - 0.6)   = 1
    //   y=2: last = 0.24 + 0.8 = 1.04; / (1 - 0.36)  = 1.625 = 13/8
    //   y=3: last = 0.624 + 1.2 = 1.824; / (1 - 0.216) = 114/49
    QTest::newRow("three points") << 0.6 << QVector<double>{1.0, 2.0, 3.0}
                                  << QVector<double>{1.0, 13.0 / 8.0, 114.0 / 49.0} << 3L;

    // Non-finite values come out unchanged and do not advance n:
    //   y=4   : last = 1.6                 ; / 0.4           = 4
    //   y=3.5 : last = 0.96 + 1.4 = 2.36   ; / 0.64          = 59/16
    //   NaN   : passes through
    //   y=3   : last = 1.416 + 1.2 = 2.616 ; / (1 - 0.6^3)   = 2.616 / 0.784 = 327/98
    //   y=2.75: last = 1.5696 + 1.1 = 2.6696; / (1 - 0.6^4)  = 2.6696 / 0.8704
    //   +inf  : passes through
    //   y=2.5 : last = 1.60176 + 1 = 2.60176; / (1 - 0.6^5) = 2.60176 / 0.92224
    QTest::newRow("nan and inf pass through")
        << 0.6 << QVector<double>{4.0, 3.5, kNaN, 3.0, 2.75, kInf, 2.5}
        << QVector<double>{4.0, 59.0 / 16.0, kNaN, 327.0 / 98.0, 2.6696 / 0.8704, kInf, 2.60176 / 0.92224}
        << 5L;

    // w = 0.5: y=2 -> last 1, /0.5 = 2; y=4 -> last 0.5 + 2 = 2.5, /0.75 = 10/3.
    QTest::newRow("weight 0.5") << 0.5 << QVector<double>{2.0, 4.0} << QVector<double>{2.0, 10.0 / 3.0}
                                << 2L;

    // A leading NaN must not count as a first point: the first finite value is returned as is.
    QTest::newRow("leading nan") << 0.6 << QVector<double>{kNaN, 5.0} << QVector<double>{kNaN, 5.0} << 1L;
}

void TestEmaSmoother::matchesTensorBoardFormula() {
    QFETCH(double, weight);
    QFETCH(QVector<double>, input);
    QFETCH(QVector<double>, expected);
    QFETCH(long, finite_count);

    EmaSmoother smoother(weight);
    QCOMPARE(input.size(), expected.size());
    for (qsizetype i = 0; i < input.size(); ++i) {
        const double actual = smoother.add(input[i]);
        QVERIFY2(sameValue(actual, expected[i]),
                 qPrintable(QStringLiteral("point %1: got %2, expected %3")
                                .arg(i)
                                .arg(actual, 0, 'g', 17)
                                .arg(expected[i], 0, 'g', 17)));
    }
    QCOMPARE(smoother.count(), finite_count);
}

void TestEmaSmoother::zeroWeightLeavesSeriesUnchanged() {
    EmaSmoother smoother(0.0);
    for (double y : {3.0, -1.5, 7.25}) QCOMPARE(smoother.add(y), y);
}

void TestEmaSmoother::resetStartsOver() {
    EmaSmoother smoother(0.6);
    smoother.add(10.0);
    smoother.add(20.0);
    smoother.reset();
    QCOMPARE(smoother.count(), 0L);
    QCOMPARE(smoother.add(2.0), 2.0);
    QVERIFY(sameValue(smoother.add(4.0), (0.24 * 2.0 + 1.6) / 0.64));  // last 0.48 + 1.6
}

void TestEmaSmoother::outOfRangeWeightIsClamped() {
    EmaSmoother negative(-0.5);
    QCOMPARE(negative.weight(), 0.0);
    EmaSmoother one(1.0);
    QVERIFY(one.weight() < 1.0);
    QVERIFY(std::isfinite(one.add(3.0)));
}

QTEST_MAIN(TestEmaSmoother)
#include "test_ema_smoother.moc"
