// CLI end-to-end suite for planning another machine: `plan --target` as the target section
// writes it, offload's tiers and step time in plan's output, and `probe`.
#include <QtTest/QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include "cli_process.h"

using namespace trainbench;

class TestCliTarget : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void planTargetIsTheTargetSection() {
        const QString config = kConfigs + "/deepseek/config_16B.json";
        const QStringList batch = {"--set", "train.seq_len=4096", "--set", "train.micro_batch_size=1", "--set",
                                   "train.gradient_accumulation_steps=8", "--set", "runtime.dtype=bf16"};
        Result flag = runCli(QStringList{"plan", config, "--json", "--target", "1xh100-80"} + batch);
        QVERIFY2(flag.code == 0, qPrintable(flag.err));
        Result set = runCli(QStringList{"plan", config, "--json", "--set", "target.kind=h100-80", "--set", "target.devices=1"} +
                            batch);
        QCOMPARE(flag.out, set.out);
        const QJsonObject p = QJsonDocument::fromJson(flag.out.toUtf8()).object();
        QCOMPARE(p["target"].toObject()["label"].toString(), QString("1 x H100 80 GB"));
        QCOMPARE(p["world_size"].toInt(), 1);
        QCOMPARE(p["limit_bytes"].toDouble(), 81559.0 * 1024 * 1024);
        // Nothing fits one device without offload; the advice offloads and predicts its step.
        const QJsonObject cheapest = p["advice"].toObject()["cheapest"].toObject();
        QVERIFY(cheapest["offload"].toString() != "none");
        QVERIFY(cheapest["host_bytes"].toDouble() > 100.0 * 1024 * 1024 * 1024);  // the optimizer state, 16B x 12 B
        QVERIFY(cheapest["step_time"].toObject()["step_s"].toDouble() > 0);
        QVERIFY(!cheapest["step_time"].toObject()["bound"].toString().isEmpty());

        Result text = runCli(QStringList{"plan", config, "--target", "1 x h100-80", "--set", "runtime.offload=optimizer",
                                         "--set", "runtime.zero_stage=2"} +
                             batch);
        QVERIFY2(text.code == 0, qPrintable(text.err));
        QVERIFY2(text.out.contains("target: 1 x H100 80 GB"), qPrintable(text.out));
        QVERIFY2(text.out.contains("host memory per rank"), qPrintable(text.out));
        QVERIFY2(text.out.contains("step time: predicted"), qPrintable(text.out));

        Result bad = runCli({"plan", config, "--target", "8xh900"});
        QCOMPARE(bad.code, 2);
        QVERIFY2(bad.err.contains("target.kind"), qPrintable(bad.err));
        Result custom = runCli({"plan", config, "--target", "2xcustom"});
        QCOMPARE(custom.code, 2);
        QVERIFY2(custom.err.contains("target.device_memory_gib"), qPrintable(custom.err));
    }

    void probeMeasuresThisMachine() {
        QTemporaryDir dir(QDir::currentPath() + "/probe-XXXXXX");  // a real disk: /tmp may be tmpfs
        QVERIFY(dir.isValid());
        Result r = runCli({"probe", "--mib", "16", "--dir", dir.path(), "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject p = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(p["host_copy_gbps"].toDouble() > 0);
        QVERIFY(p["cpu_fp32_tflops"].toDouble() > 0);
        QVERIFY(p["directory_write_gbps"].toDouble() > 0);
        QVERIFY(p["directory_read_gbps"].toDouble() > 0);
        QCOMPARE(p["directory_bytes"].toDouble(), 16.0 * 1024 * 1024);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 0);  // its scratch file removed
        Result missing = runCli({"probe", "--mib", "16", "--dir", dir.path() + "/missing"});
        QCOMPARE(missing.code, 2);
        QVERIFY2(missing.err.contains("--dir"), qPrintable(missing.err));
    }
};

QTEST_GUILESS_MAIN(TestCliTarget)
#include "test_cli_target.moc"
