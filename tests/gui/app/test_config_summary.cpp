// Tests the side panel's summary of a run config: the strings the window shows for the tiny preset.
#include <QTest>

#include "app/config_summary.h"
#include "trainbench/presets.h"

using namespace trainbench::gui;
using trainbench::builtinTinyConfig;

class TestConfigSummary : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void summarizesTinyPreset();
};

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
