// CLI end-to-end suite for planning another machine: `plan --target` as the target section
// writes it, offload's tiers and step time in plan's output, and `probe`.
#include <QtTest/QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <cmath>

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

        // Kinds in any case, and a bare name where one memory size is the usual one, said on stderr.
        Result upper = runCli(QStringList{"plan", config, "--json", "--target", "1xH100-80"} + batch);
        QVERIFY2(upper.code == 0, qPrintable(upper.err));
        QCOMPARE(upper.out, flag.out);
        Result bare = runCli(QStringList{"plan", config, "--json", "--target", "1 x H100"} + batch);
        QVERIFY2(bare.code == 0, qPrintable(bare.err));
        QCOMPARE(bare.out, flag.out);
        QVERIFY2(bare.err.contains("h100-80"), qPrintable(bare.err));
        Result h200 = runCli(QStringList{"plan", config, "--json", "--target", "8xh200"} + batch);
        QVERIFY2(h200.code == 0, qPrintable(h200.err));
        QCOMPARE(QJsonDocument::fromJson(h200.out.toUtf8()).object()["target"].toObject()["label"].toString(),
                 QString("8 x H200 141 GB"));
        Result a100 = runCli({"plan", config, "--target", "8xA100"});
        QCOMPARE(a100.code, 2);
        QVERIFY2(a100.err.contains("a100-40") && a100.err.contains("a100-80"), qPrintable(a100.err));

        Result bad = runCli({"plan", config, "--target", "8xh900"});
        QCOMPARE(bad.code, 2);
        QVERIFY2(bad.err.contains("target.kind"), qPrintable(bad.err));
        Result custom = runCli({"plan", config, "--target", "2xcustom"});
        QCOMPARE(custom.code, 2);
        QVERIFY2(custom.err.contains("target.device_memory_gib"), qPrintable(custom.err));
    }

    // The four precisions side by side: text and JSON, at the config's layout and on a target.
    void planShowsThePrecisions() {
        const QString small = kConfigs + "/small.json";
        // 1800 MiB: fp32 and bf16 fit m = 4 of small's global batch 16, fp8 m = 8.
        const QStringList here = {"--set", "runtime.device=cpu", "--set", "runtime.memory_limit_mb=1800"};
        Result r = runCli(QStringList{"plan", small, "--json"} + here);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject p = QJsonDocument::fromJson(r.out.toUtf8()).object();
        for (const char* key : {"weight_bytes", "optimizer_bytes", "activation_bytes", "peak_bytes", "limit_bytes",
                                "largest_fitting_micro_batch", "advice", "inference_cache"})
            QVERIFY2(p.contains(key), key);  // the plan's own fields stay
        const QJsonArray precisions = p["precisions"].toArray();
        QCOMPARE(precisions.size(), 4);
        const char* dtypes[] = {"fp32", "bf16", "fp8", "fp8"};
        const char* moments[] = {"fp32", "fp32", "fp32", "bf16"};
        const int largest[] = {4, 4, 8, 8};
        for (int i = 0; i < 4; ++i) {
            const QJsonObject f = precisions[i].toObject();
            QCOMPARE(f["dtype"].toString(), QString(dtypes[i]));
            QCOMPARE(f["optimizer_dtype"].toString(), QString(moments[i]));
            QCOMPARE(f["largest_micro_batch"].toInt(), largest[i]);
            QCOMPARE(f["micro_batch_size"].toInt(), 4);
            QCOMPARE(f["limit_bytes"].toDouble(), 1800.0 * 1024 * 1024);
            QCOMPARE(f["plan"].toObject()["peak_bytes"].toDouble(), f["peak_bytes"].toDouble());
        }
        // The config's own precision (fp32) is the plan above it.
        QCOMPARE(precisions[0].toObject()["peak_bytes"].toDouble(), p["peak_bytes"].toDouble());
        QCOMPARE(precisions[0].toObject()["activation_bytes"].toDouble(), p["activation_bytes"].toDouble());
        QVERIFY(precisions[2].toObject()["activation_bytes"].toDouble() < p["activation_bytes"].toDouble());
        QCOMPARE(precisions[3].toObject()["optimizer_bytes"].toDouble() * 2, p["optimizer_bytes"].toDouble());

        Result text = runCli(QStringList{"plan", small} + here);
        QVERIFY2(text.code == 0, qPrintable(text.err));
        QVERIFY2(text.out.contains("precisions at this layout"), qPrintable(text.out));
        const QStringList lines = text.out.split('\n');
        auto row = [&](const QString& dtype, const QString& moments) {
            for (const QString& line : lines) {
                const QStringList words = line.simplified().split(' ');
                if (words.size() >= 3 && words[0] == dtype && words[1] == moments) return words;
            }
            return QStringList();
        };
        QCOMPARE(row("fp32", "fp32").value(2), QString("4"));
        QCOMPARE(row("fp8", "fp32").value(2), QString("8"));
        QCOMPARE(row("fp8", "bf16").value(2), QString("8"));

        // On a target: each precision against the target's device (16B needs offload or more
        // devices on one H100: nothing fits without, in any precision).
        Result target = runCli({"plan", kConfigs + "/deepseek/config_16B.json", "--json", "--target", "1xh100-80", "--set",
                                "train.seq_len=4096", "--set", "train.micro_batch_size=1", "--set",
                                "train.gradient_accumulation_steps=8"});
        QVERIFY2(target.code == 0, qPrintable(target.err));
        const QJsonArray on_target = QJsonDocument::fromJson(target.out.toUtf8()).object()["precisions"].toArray();
        QCOMPARE(on_target.size(), 4);
        for (const auto& value : on_target) {
            QCOMPARE(value.toObject()["limit_bytes"].toDouble(), 81559.0 * 1024 * 1024);
            QCOMPARE(value.toObject()["largest_micro_batch"].toInt(), 0);
        }
        QVERIFY(on_target[3].toObject()["peak_bytes"].toDouble() < on_target[1].toObject()["peak_bytes"].toDouble());
    }

    // A budget the window's boundaries do not fit (CPU rank threads: the one memory): `plan`
    // puts them in offload_dir beside the optimizer's state and the gradient sums, the run takes
    // that placement, trains to the same loss as with a roomy budget (boundaries on the device),
    // and writes its final checkpoint: the whole state it gathers is the host tier's, not the
    // rank's budget (which it once overflowed after the last step).
    void theBoundariesGoToOffloadDirWhereTheBudgetSaysSo() {
        QTemporaryDir scratch(QDir::currentPath() + "/boundaries-XXXXXX");  // a real disk: /tmp may be tmpfs
        QTemporaryDir store;
        QVERIFY(scratch.isValid() && store.isValid());
        const QStringList run_config = {kConfigs + "/small.json", "--set", "runtime.world_size=2", "--set",
                                        "runtime.zero_stage=3", "--set", "runtime.offload=all", "--set",
                                        "runtime.offload_dir=" + scratch.path(), "--set", "runtime.activation_checkpointing=full",
                                        "--set", "runtime.window_schedule=unit", "--set", "train.gradient_accumulation_steps=8",
                                        "--set", "train.micro_batch_size=2", "--set", "train.seq_len=32", "--set",
                                        "train.steps=1"};
        const QStringList tight = {"--set", "runtime.memory_limit_mb=250"};
        Result plan = runCli(QStringList{"plan"} + run_config + tight);
        QVERIFY2(plan.code == 0, qPrintable(plan.err));
        QVERIFY2(plan.out.contains("boundary activations in offload_dir"), qPrintable(plan.out));
        Result in_file = runCli(QStringList{"run"} + run_config + tight + QStringList{"--store", store.path()});
        QVERIFY2(in_file.code == 0, qPrintable(in_file.err + in_file.out));
        QCOMPARE(lastJsonLine(in_file.out)["status"].toString(), QStringLiteral("completed"));
        QVERIFY2((in_file.err + in_file.out).contains("[checkpoint]"), qPrintable(in_file.err));
        Result roomy = runCli(QStringList{"run"} + run_config + QStringList{"--store", store.path()});
        QVERIFY2(roomy.code == 0, qPrintable(roomy.err));
        const double a = lastJsonLine(in_file.out)["final_loss"].toDouble(), b = lastJsonLine(roomy.out)["final_loss"].toDouble();
        QVERIFY2(a == b && std::isfinite(a), qPrintable(QString("%1 vs %2").arg(a, 0, 'g', 17).arg(b, 0, 'g', 17)));
        QCOMPARE(QDir(scratch.path()).entryList(QDir::Files).size(), 0);  // the scratch files removed
    }

    void probeMeasuresThisMachine() {
        QTemporaryDir dir(QDir::currentPath() + "/probe-XXXXXX");  // a real disk: /tmp may be tmpfs
        QVERIFY(dir.isValid());
        Result r = runCli({"probe", "--mib", "16", "--dir", dir.path(), "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject p = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(p["host_copy_gbps"].toDouble() > 0);
        QVERIFY(p["cpu_fp32_tflops"].toDouble() > 0);
        QVERIFY(p["cpu_adamw_gparams"].toDouble() > 0);
        QVERIFY(p["directory_write_gbps"].toDouble() > 0);
        QVERIFY(p["directory_read_gbps"].toDouble() > 0);
        QCOMPARE(p["directory_bytes"].toDouble(), 16.0 * 1024 * 1024);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 0);  // its scratch file removed
        QCOMPARE(p["step_mfu"].toDouble(), 0.0);  // no config: no model to time
        // With a config on CPU ranks: a micro-batch of its model timed against the matrix rate,
        // and the flags carry the compute with it.
        Result with_model = runCli({"probe", kConfigs + "/tiny.json", "--mib", "16", "--json"});
        QVERIFY2(with_model.code == 0, qPrintable(with_model.err));
        QVERIFY(QJsonDocument::fromJson(with_model.out.toUtf8()).object()["step_mfu"].toDouble() > 0);
        Result text = runCli({"probe", kConfigs + "/tiny.json", "--mib", "16"});
        QVERIFY2(text.out.contains("--set target.compute_tflops=") && text.out.contains("--set target.mfu=") &&
                     text.out.contains("--set target.cpu_adamw_gparams="),
                 qPrintable(text.out));
        // Two CPU rank threads: their collectives timed too, and the flags carry the rate.
        Result ranks = runCli({"probe", kConfigs + "/tiny.json", "--mib", "16", "--set", "runtime.world_size=2", "--json"});
        QVERIFY2(ranks.code == 0, qPrintable(ranks.err));
        const QJsonObject two = QJsonDocument::fromJson(ranks.out.toUtf8()).object();
        QCOMPARE(two["collective_ranks"].toInt(), 2);
        QVERIFY(two["rank_collectives_gbps"].toDouble() > 0);
        QCOMPARE(QJsonDocument::fromJson(with_model.out.toUtf8()).object()["rank_collectives_gbps"].toDouble(), 0.0);
        Result ranks_text = runCli({"probe", kConfigs + "/tiny.json", "--mib", "16", "--set", "runtime.world_size=2"});
        QVERIFY2(ranks_text.out.contains("--set target.interconnect_gbps="), qPrintable(ranks_text.out));
        QVERIFY2(!text.out.contains("interconnect_gbps"), qPrintable(text.out));
        Result missing = runCli({"probe", "--mib", "16", "--dir", dir.path() + "/missing"});
        QCOMPARE(missing.code, 2);
        QVERIFY2(missing.err.contains("--dir"), qPrintable(missing.err));
    }
};

QTEST_GUILESS_MAIN(TestCliTarget)
#include "test_cli_target.moc"
