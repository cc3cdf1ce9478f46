// Tests the display strings of a run config: unit-prefixed counts, grouping, the batch equation.
#include <QTest>

#include "config_summary.h"
#include "trainbench/presets.h"

using namespace trainbench::gui;
using trainbench::builtinTinyConfig;

class TestConfigSummary : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void formatsCounts_data();
    void formatsCounts();
    void groupsDigits();
    void formatsBytes_data();
    void formatsBytes();
    void writesBatchEquation();
    void summarizesTinyPreset();
};

void TestConfigSummary::formatsCounts_data() {
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

void TestConfigSummary::formatsCounts() {
    QFETCH(qlonglong, count);
    QFETCH(QString, text);
    QCOMPARE(formatCount(count), text);
}

void TestConfigSummary::groupsDigits() {
    QCOMPARE(formatGrouped(1024), QStringLiteral("1,024"));
    QCOMPARE(formatGrouped(1048576), QStringLiteral("1,048,576"));
    QCOMPARE(formatGrouped(64), QStringLiteral("64"));
}

void TestConfigSummary::formatsBytes_data() {
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

void TestConfigSummary::formatsBytes() {
    QFETCH(qlonglong, bytes);
    QFETCH(QString, text);
    QCOMPARE(formatBytes(bytes), text);
}

void TestConfigSummary::writesBatchEquation() {
    QCOMPARE(formatBatchEquation(8, 2, 1), QStringLiteral("m 8 × K 2 × W 1 = B 16 sequences"));
    QCOMPARE(formatBatchEquation(4, 8, 2), QStringLiteral("m 4 × K 8 × W 2 = B 64 sequences"));
    QCOMPARE(formatBatchEquation(1, 1, 1), QStringLiteral("m 1 × K 1 × W 1 = B 1 sequence"));
}

void TestConfigSummary::summarizesTinyPreset() {
    const ConfigSummary summary = summarizeConfig(builtinTinyConfig());
    // tiny: m 8, K 2, W 1, seq_len 64 -> 16 sequences of 64 tokens = 1,024 tokens per step.
    QCOMPARE(summary.batch_equation, QStringLiteral("m 8 × K 2 × W 1 = B 16 sequences"));
    QVERIFY2(summary.tokens_per_step.startsWith(QStringLiteral("1,024")), qPrintable(summary.tokens_per_step));
    QCOMPARE(summary.seq_len, QStringLiteral("64"));
    QCOMPARE(summary.steps, QStringLiteral("150"));
    QCOMPARE(summary.learning_rate, QStringLiteral("0.003 → 0.0003"));
    QCOMPARE(summary.schedule, QStringLiteral("cosine, 10 warmup steps"));
    QCOMPARE(summary.device, QStringLiteral("cpu · fp32"));
    // "auto" says what it resolves to: tiny (dim 64) computes in fp32 on any CPU, bf16 on a GPU.
    trainbench::RunConfig automatic = builtinTinyConfig();
    automatic.runtime.dtype = "auto";
    QCOMPARE(summarizeConfig(automatic).device, QStringLiteral("cpu · auto → fp32"));
    automatic.runtime.device = "cuda";
    QCOMPARE(summarizeConfig(automatic).device, QStringLiteral("cuda · auto → bf16"));
}

QTEST_MAIN(TestConfigSummary)
#include "test_config_summary.moc"
