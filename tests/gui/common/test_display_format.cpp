// Tests how the workbench writes numbers: unit-prefixed counts, grouping, bytes, the batch equation.
#include <QTest>

#include "common/display_format.h"

using namespace trainbench::gui;

class TestDisplayFormat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void formatsCounts_data();
    void formatsCounts();
    void groupsDigits();
    void formatsBytes_data();
    void formatsBytes();
    void writesBatchEquation();
    void writesEachRanksPeak();
    void formatsDurations_data();
    void formatsDurations();
};

void TestDisplayFormat::formatsCounts_data() {
    QTest::addColumn<qlonglong>("count");
    QTest::addColumn<QString>("text");
    QTest::newRow("zero") << 0LL << "0";
    QTest::newRow("below a thousand") << 999LL << "999";
    QTest::newRow("one thousand") << 1000LL << "1.00 k";
    QTest::newRow("tens of thousands") << 12345LL << "12.3 k";
    QTest::newRow("rounds up into the next prefix") << 999999LL << "1.00 M";
    QTest::newRow("millions") << 1234567LL << "1.23 M";
    QTest::newRow("hundreds of millions") << 123456789LL << "123 M";
    QTest::newRow("DeepSeek-V3 total") << 671026419200LL << "671 B";
    QTest::newRow("trillions") << 1500000000000LL << "1.50 T";
}

void TestDisplayFormat::formatsCounts() {
    QFETCH(qlonglong, count);
    QFETCH(QString, text);
    QCOMPARE(formatCount(count), text);
}

void TestDisplayFormat::groupsDigits() {
    QCOMPARE(formatGrouped(1024), QStringLiteral("1,024"));
    QCOMPARE(formatGrouped(1048576), QStringLiteral("1,048,576"));
    QCOMPARE(formatGrouped(64), QStringLiteral("64"));
}

void TestDisplayFormat::formatsBytes_data() {
    QTest::addColumn<qlonglong>("bytes");
    QTest::addColumn<QString>("text");
    QTest::newRow("zero") << 0LL << "0 B";
    QTest::newRow("below a KiB") << 1023LL << "1023 B";
    QTest::newRow("one KiB") << 1024LL << "1.00 KiB";
    QTest::newRow("one and a half KiB") << 1536LL << "1.50 KiB";
    QTest::newRow("tens of MiB") << 12LL * 1024 * 1024 + 300 * 1024 << "12.3 MiB";
    QTest::newRow("hundreds of MiB") << 300LL * 1024 * 1024 << "300 MiB";
    QTest::newRow("rounds up into the next unit") << 1023LL * 1024 * 1024 + 1000 * 1024 << "1.00 GiB";
    QTest::newRow("a 24 GiB host") << 24LL * 1024 * 1024 * 1024 << "24.0 GiB";
    QTest::newRow("141 GiB of HBM") << 141LL * 1024 * 1024 * 1024 << "141 GiB";
    QTest::newRow("negative (a deficit)") << -2048LL << "-2.00 KiB";
}

void TestDisplayFormat::formatsBytes() {
    QFETCH(qlonglong, bytes);
    QFETCH(QString, text);
    QCOMPARE(formatBytes(bytes), text);
}

void TestDisplayFormat::writesBatchEquation() {
    QCOMPARE(formatBatchEquation(8, 2, 1), QStringLiteral("m 8 × K 2 × W 1 = B 16 sequences"));
    QCOMPARE(formatBatchEquation(4, 8, 2), QStringLiteral("m 4 × K 8 × W 2 = B 64 sequences"));
    QCOMPARE(formatBatchEquation(1, 1, 1), QStringLiteral("m 1 × K 1 × W 1 = B 1 sequence"));
}


void TestDisplayFormat::writesEachRanksPeak() {
    QCOMPARE(formatRankPeaks({}), QString());
    QCOMPARE(formatRankPeaks({{"cpu0", 5 << 20}, {"cpu1", 3 << 19}}), QStringLiteral("cpu0 5.00 MiB · cpu1 1.50 MiB"));
    std::vector<std::pair<QString, int64_t>> eight;
    for (int r = 0; r < 8; ++r) eight.emplace_back(QStringLiteral("cuda%1").arg(r), int64_t(10 + (r == 3 ? 5 : r % 2)) << 30);
    QCOMPARE(formatRankPeaks(eight), QStringLiteral("10.0 GiB – 15.0 GiB (cuda3 most)"));
    QCOMPARE(formatRankPeaks({{"cpu0", 7 << 20}, {"cpu1", 7 << 20}, {"cpu2", 7 << 20}}), QStringLiteral("7.00 MiB on each of 3"));
}


void TestDisplayFormat::formatsDurations_data() {
    QTest::addColumn<double>("seconds");
    QTest::addColumn<QString>("text");
    QTest::newRow("zero") << 0.0 << "0.0 s";
    QTest::newRow("under a minute") << 42.04 << "42.0 s";
    QTest::newRow("one minute") << 60.0 << "0:01:00";
    QTest::newRow("61 min 5 s") << 3665.9 << "1:01:05";
    QTest::newRow("over a day") << 90061.0 << "25:01:01";
    QTest::newRow("unknown") << qQNaN() << "—";
}

void TestDisplayFormat::formatsDurations() {
    QFETCH(double, seconds);
    QFETCH(QString, text);
    QCOMPARE(formatDuration(seconds), text);
}

QTEST_MAIN(TestDisplayFormat)
#include "test_display_format.moc"
