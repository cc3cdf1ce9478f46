// CLI end-to-end suite: trainbench-cli as a user runs it, as a child process.
#include <QtTest/QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <cmath>
#include <signal.h>
#include <tuple>

#include "cli_process.h"
#include "trainbench/run_store.h"

using namespace trainbench;


class TestCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void runStoresTheRunAndExportsEveryPoint() {
        QTemporaryDir store;
        Result r = runCli({"run", kConfigs + "/tiny.json", "--set", "train.steps=5", "--store", store.path(), "--name",
                           "smoke"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QJsonObject summary = lastJsonLine(r.out);
        QCOMPARE(summary["status"].toString(), QString("completed"));
        QCOMPARE(summary["steps"].toInt(), 5);
        QCOMPARE(summary["global_batch_size"].toInt(), 16);
        QCOMPARE(summary["tokens"].toInt(), 5 * 16 * 64);
        for (const char* key : {"run_id", "final_loss", "micro_batch_size", "gradient_accumulation_steps", "world_size",
                                "peak_memory_bytes", "tokens_per_s", "wall_time_s"})
            QVERIFY2(summary.contains(key), key);
        const QString id = summary["run_id"].toString();

        Result runs = runCli({"runs", "--store", store.path(), "--json"});
        QCOMPARE(runs.code, 0);
        QJsonArray list = QJsonDocument::fromJson(runs.out.toUtf8()).array();
        QCOMPARE(list.size(), 1);
        QJsonObject run = list[0].toObject();
        QCOMPARE(run["run_id"].toString(), id);
        QCOMPARE(run["name"].toString(), QString("smoke"));
        QCOMPARE(run["status"].toString(), QString("completed"));
        QCOMPARE(run["steps"].toInt(), 5);
        QCOMPARE(run["final_loss"].toDouble(), summary["final_loss"].toDouble());
        QVERIFY(run.contains("created"));
        // The stored summary is the line `run` printed.
        QCOMPARE(run["summary"].toObject(), summary);

        QCOMPARE(runCli({"runs", "tag", id, "baseline,smoke", "--store", store.path()}).code, 0);
        QCOMPARE(runCli({"runs", "note", id, "first try", "--store", store.path()}).code, 0);
        QCOMPARE(runCli({"runs", "tag", "no-such-run", "x", "--store", store.path()}).code, 2);
        list = QJsonDocument::fromJson(runCli({"runs", "--store", store.path(), "--json"}).out.toUtf8()).array();
        QCOMPARE(list[0].toObject()["tags"].toString(), QString("baseline,smoke"));

        Result jsonl = runCli({"export", id, "--format", "jsonl", "--store", store.path()});
        QCOMPARE(jsonl.code, 0);
        int losses = 0;
        for (const QString& line : jsonl.out.trimmed().split('\n')) {
            QJsonObject p = QJsonDocument::fromJson(line.toUtf8()).object();
            for (const char* key : {"step", "tokens", "wall_time", "key", "value"}) QVERIFY(p.contains(key));
            if (p["key"].toString() == "train/loss") QCOMPARE(p["step"].toInt(), ++losses);
        }
        QCOMPARE(losses, 5);
        Result csv = runCli({"export", id, "--format", "csv", "--store", store.path()});
        QCOMPARE(csv.out.split('\n').first(), QString("step,tokens,wall_time,key,value"));
        QCOMPARE(csv.out.trimmed().split('\n').size(), jsonl.out.trimmed().split('\n').size() + 1);
    }

    // Prompt/completion pairs from a JSON Lines file: `data` counts documents and the targets
    // the loss will count, a run trains on exactly those (by hand: each pair is a 10-byte
    // prompt, a 5-byte completion and the end byte; a padded row of seq_len 15 + 1 holds one
    // pair and counts its 5 completion bytes and the end byte), and a bad line is refused
    // with exit 2 naming the file and the line, nothing recorded.
    void jsonlPairsFromTheCommandLine() {
        QTemporaryDir dir;
        const QString path = dir.filePath("pairs.jsonl");
        {
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            for (int i = 0; i < 100; ++i)
                file.write(QString("{\"prompt\": \"questions%1\", \"completion\": \"ans%2\"}\n")
                               .arg(i % 10)
                               .arg(i % 100, 2, 10, QChar('0'))
                               .toUtf8());
        }
        const QStringList data{"--set", "data.source=jsonl", "--set", "data.path=" + path, "--set",
                               "data.prompt_field=prompt", "--set", "data.completion_field=completion", "--set",
                               "data.layout=padded", "--set", "model.vocab_size=256", "--set", "train.seq_len=15",
                               "--set", "train.eval_every=0"};
        Result described = runCli(QStringList{"data", kConfigs + "/tiny.json", "--json"} + data);
        QVERIFY2(described.code == 0, qPrintable(described.err));
        const QJsonObject d = QJsonDocument::fromJson(described.out.toUtf8()).object();
        QCOMPARE(d["source"].toString(), QString("jsonl"));
        QCOMPARE(d["train_documents"].toInt(), 95);  // val_fraction 0.05 holds out 5 documents
        QCOMPARE(d["val_documents"].toInt(), 5);
        QCOMPARE(d["train_tokens"].toInt(), 95 * 16);
        QCOMPARE(d["train_counted"].toInt(), 95 * 6);
        QCOMPARE(d["val_counted"].toInt(), 5 * 6);

        QTemporaryDir store;
        Result r = runCli(QStringList{"run", kConfigs + "/tiny.json", "--set", "train.steps=3", "--store", store.path()} + data);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject summary = lastJsonLine(r.out);
        QCOMPARE(summary["status"].toString(), QString("completed"));
        QCOMPARE(summary["tokens"].toInt(), 3 * 16 * 6);  // 16 rows a step (m 8 x K 2), 6 counted each

        QFile broken(dir.filePath("broken.jsonl"));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write("{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": \"a\", \"completion\": \"b\"}\n{oops\n");
        broken.close();
        QTemporaryDir empty;
        QStringList bad = data;
        bad[3] = "data.path=" + broken.fileName();
        Result refused = runCli(QStringList{"run", kConfigs + "/tiny.json", "--store", empty.path()} + bad);
        QCOMPARE(refused.code, 2);
        QVERIFY2(refused.err.contains(broken.fileName()) && refused.err.contains("line 3") &&
                     refused.err.contains("not JSON"),
                 qPrintable(refused.err));
        QCOMPARE(RunStore(empty.path().toStdString()).listRuns().size(), size_t(0));
    }

    void badInputExitsWithTwoAndWritesNothing_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("named");
        QTest::newRow("unknown key") << QStringList{"--set", "train.stepz=3"} << "did you mean 'train.steps'";
        QTest::newRow("bad value") << QStringList{"--set", "model.n_activated_experts=99"} << "model.n_activated_experts";
        QTest::newRow("bad batch") << QStringList{"--set", "train.global_batch_size=7"} << "train.global_batch_size";
        QTest::newRow("missing data file") << QStringList{"--set", "data.source=tokens", "--set", "data.path=/nonexistent.bin"}
                                           << "/nonexistent.bin";
    }
    void badInputExitsWithTwoAndWritesNothing() {
        QFETCH(QStringList, args);
        QFETCH(QString, named);
        QTemporaryDir store;
        Result r = runCli(QStringList{"run", kConfigs + "/tiny.json", "--store", store.path()} + args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(named), qPrintable(r.err));
        Result runs = runCli({"runs", "--store", store.path(), "--json"});
        QCOMPARE(QJsonDocument::fromJson(runs.out.toUtf8()).array().size(), 0);
    }

    // A process torchrun started as one of several ranks: without the rendezvous address it
    // is told which variable is missing (exit 2); with it, alone, it waits for the others up to
    // runtime.comm_timeout_s and names the rank that never came (exit 3). Both before anything
    // trains or is recorded.
    void aLaunchedRankWithoutItsPeersIsToldWhatIsMissing() {
        QTemporaryDir store;
        auto launched = [&](bool with_address) {
            QProcess process;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert("WORLD_SIZE", "2");
            env.insert("RANK", "0");
            if (with_address) {
                env.insert("MASTER_ADDR", "127.0.0.1");
                env.insert("MASTER_PORT", "29555");
            }
            process.setProcessEnvironment(env);
            process.start(kCli, {"run", kConfigs + "/tiny.json", "--set", "runtime.device=cpu", "--set",
                                 "runtime.comm_timeout_s=2", "--store", store.path()});
            if (!process.waitForFinished(60000)) qFatal("the CLI did not finish");
            return std::make_pair(process.exitCode(), QString::fromUtf8(process.readAllStandardError()));
        };
        const auto [no_address_code, no_address] = launched(false);
        QCOMPARE(no_address_code, 2);
        QVERIFY2(no_address.contains("MASTER_ADDR is not set"), qPrintable(no_address));
        const auto [alone_code, alone] = launched(true);
        QCOMPARE(alone_code, 3);
        QVERIFY2(alone.contains("rank 1 of 2 did not come to the rendezvous"), qPrintable(alone));
        Result runs = runCli({"runs", "--store", store.path(), "--json"});
        QCOMPARE(QJsonDocument::fromJson(runs.out.toUtf8()).array().size(), 0);
    }

    // `config` prints what the engine will run: the file, the defaults and the overrides.
    void gridTrainsEveryPointKeepingTheGlobalBatch() {
        QTemporaryDir store;
        // tiny is m 8 x K 2 = 16 sequences; the grid's m 4 and 16 get K 4 and 1.
        Result r = runCli({"run", kConfigs + "/tiny.json", "--set", "train.steps=3", "--store", store.path(), "--grid",
                           "train.micro_batch_size=4,16"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QStringList lines = r.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 2);
        const QJsonObject a = QJsonDocument::fromJson(lines[0].toUtf8()).object();
        const QJsonObject b = QJsonDocument::fromJson(lines[1].toUtf8()).object();
        QCOMPARE(a["micro_batch_size"].toInt(), 4);
        QCOMPARE(a["gradient_accumulation_steps"].toInt(), 4);
        QCOMPARE(b["micro_batch_size"].toInt(), 16);
        QCOMPARE(b["gradient_accumulation_steps"].toInt(), 1);
        // Exact accumulation: two splits of one global batch train to the same loss (fp32).
        const double loss_a = a["final_loss"].toDouble(), loss_b = b["final_loss"].toDouble();
        QVERIFY2(std::abs(loss_a - loss_b) <= 1e-5 * std::abs(loss_b), qPrintable(QString::number(loss_a - loss_b)));
        RunStore runs(store.path().toStdString());
        QCOMPARE(runs.findRun(a["run_id"].toString().toStdString())->name, std::string("tiny m=4 K=4"));
        QCOMPARE(runs.listRuns().size(), size_t(2));

        // A point that cannot keep the global batch: nothing trains, exit 2 with the valid sizes.
        QTemporaryDir empty;
        Result refused = runCli({"run", kConfigs + "/tiny.json", "--store", empty.path(), "--grid",
                                 "train.micro_batch_size=4,3"});
        QCOMPARE(refused.code, 2);
        QVERIFY2(refused.err.contains("m=3") && refused.err.contains("1, 2, 4, 8, 16"), qPrintable(refused.err));
        QCOMPARE(RunStore(empty.path().toStdString()).listRuns().size(), size_t(0));
    }

    void aModelLargerThanTheMachineIsRefusedBeforeAllocating() {
        // DeepSeek-V3 as published (671 B parameters) on this CPU: refused from the plan alone,
        // naming the estimate and what the device has, with nothing recorded.
        QTemporaryDir store;
        Result r = runCli({"run", kConfigs + "/deepseek/config_671B.json", "--set", "data.vocab_size=256", "--store",
                           store.path()});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("train.micro_batch_size") && r.err.contains("GiB per rank, but the device has"),
                 qPrintable(r.err));
        QCOMPARE(RunStore(store.path().toStdString()).listRuns().size(), size_t(0));
    }

    void configPrintsTheCompleteConfig() {
        Result shown = runCli({"config", kConfigs + "/tiny.json", "--set", "train.lr=0.01"});
        QCOMPARE(shown.code, 0);
        const QJsonObject config = QJsonDocument::fromJson(shown.out.toUtf8()).object();
        QCOMPARE(config["train"].toObject()["lr"].toDouble(), 0.01);
        QCOMPARE(config["model"].toObject()["dim"].toInt(), 64);  // from the file
        QCOMPARE(config["runtime"].toObject()["store_wait_s"].toDouble(), 600.0);  // a default
        Result refused = runCli({"config", kConfigs + "/tiny.json", "--set", "train.micro_batch_size=0"});
        QCOMPARE(refused.code, 2);
        QVERIFY2(refused.err.contains("train.micro_batch_size"), qPrintable(refused.err));
    }

    // Every subcommand that reads a config checks its model section before doing anything:
    // exit 2 naming the field, nothing written. A run config and a published model config (flat
    // ModelArgs keys) alike; `params` of a published config stays accepted (the test above).
    void everySubcommandRefusesAnInvalidModelSection_data() {
        QTest::addColumn<QString>("base");
        QTest::addColumn<QString>("key");
        QTest::addColumn<int>("value");
        QTest::addColumn<QString>("named");
        QTest::newRow("run config, negative dim") << "tiny.json" << "dim" << -4 << "model.dim";
        QTest::newRow("run config, 9 of 8 experts") << "tiny.json" << "n_activated_experts" << 9
                                                    << "model.n_activated_experts";
        QTest::newRow("published config, negative dim") << "deepseek/config_16B.json" << "dim" << -4 << "model.dim";
        QTest::newRow("published config, 65 of 64 experts")
            << "deepseek/config_16B.json" << "n_activated_experts" << 65 << "model.n_activated_experts";
    }
    void everySubcommandRefusesAnInvalidModelSection() {
        QFETCH(QString, base);
        QFETCH(QString, key);
        QFETCH(int, value);
        QFETCH(QString, named);
        QTemporaryDir dir;
        QFile source(kConfigs + "/" + base);
        QVERIFY(source.open(QIODevice::ReadOnly));
        QJsonObject config = QJsonDocument::fromJson(source.readAll()).object();
        if (config.contains("model")) {
            QJsonObject model = config["model"].toObject();
            model[key] = value;
            config["model"] = model;
        } else {
            config[key] = value;  // flat: the whole file is the model section
        }
        const QString path = dir.filePath("bad.json");
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(config).toJson());
        out.close();
        const QString store = dir.filePath("store");
        const QString weights = dir.filePath("weights.safetensors");
        const QList<QStringList> commands = {
            {"params", path},
            {"params", path, "--json"},
            {"plan", path},
            {"config", path},
            {"data", path},
            {"explore", path, "--steps", "1"},
            {"run", path, "--store", store},
            {"init", path, "--out", weights},
            {"eval", path, "--checkpoint", weights},
            {"noise-scale", path, "--checkpoint", weights},
        };
        for (const QStringList& args : commands) {
            Result r = runCli(args);
            QVERIFY2(r.code == 2, qPrintable(args.join(' ') + QString(" exited %1: ").arg(r.code) + r.out + r.err));
            QVERIFY2(r.err.contains(named), qPrintable(args.join(' ') + ": " + r.err));
            QVERIFY2(r.out.isEmpty(), qPrintable(args.join(' ') + " printed " + r.out));
        }
        QVERIFY2(!QFile::exists(weights), "init wrote weights of an invalid config");
        QVERIFY2(!QFile::exists(store), "run created a store for an invalid config");
    }

    // `resume` checks the stored config even without --set: a store edited by hand (or written
    // before a rule existed) is refused naming the field, and the run is left as it was.
    void resumeRefusesAnInvalidStoredConfig() {
        QTemporaryDir store;
        Result first = runCli({"run", kConfigs + "/tiny.json", "--store", store.path(), "--set", "train.steps=2",
                               "--set", "train.eval_every=0", "--set", "train.checkpoint_every=1"});
        QVERIFY2(first.code == 0, qPrintable(first.err));
        const QString id = lastJsonLine(first.out)["run_id"].toString();
        {
            RunStore rewrite(store.path().toStdString());
            auto run = rewrite.findRun(id.toStdString());
            QVERIFY(run.has_value());
            QJsonObject config = QJsonDocument::fromJson(QByteArray::fromStdString(run->config_json)).object();
            QJsonObject model = config["model"].toObject();
            model["n_activated_experts"] = 9;
            config["model"] = model;
            QJsonObject train = config["train"].toObject();
            train["steps"] = 4;  // so that a resume would train, were it allowed
            config["train"] = train;
            QProcess sqlite;
            sqlite.start("sqlite3", {QString::fromStdString(rewrite.path()),
                                     "UPDATE runs SET config = '" +
                                         QString::fromUtf8(QJsonDocument(config).toJson(QJsonDocument::Compact)) +
                                         "' WHERE id = '" + id + "';"});
            QVERIFY(sqlite.waitForFinished());
            QVERIFY2(sqlite.exitCode() == 0, sqlite.readAllStandardError().constData());
        }
        Result r = runCli({"resume", id, "--store", store.path()});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("model.n_activated_experts"), qPrintable(r.err));
        RunStore readback(store.path().toStdString());
        QCOMPARE(readback.findRun(id.toStdString())->steps, int64_t(2));
        QCOMPARE(readback.findRun(id.toStdString())->status, std::string("completed"));
    }

    // The commands that read the store or nothing: an unknown run and a bad flag are exit 2;
    // the defaults `schema` prints are valid but for the data section (the reference model's
    // vocabulary is too large for the synthetic language, which `config` says by name).
    void storeAndSchemaCommandsValidateWhatTheyRead() {
        QTemporaryDir store;
        for (const QStringList& args : QList<QStringList>{{"export", "no-such-run", "--store", store.path()},
                                                          {"resume", "no-such-run", "--store", store.path()},
                                                          {"export", "x", "--format", "xml", "--store", store.path()}}) {
            Result r = runCli(args);
            QVERIFY2(r.code == 2, qPrintable(args.join(' ') + ": " + r.err));
            QVERIFY2(r.err.contains(args[1] == "x" ? "--format" : "no-such-run"), qPrintable(r.err));
        }
        Result defaults = runCli({"schema", "--defaults"});
        QCOMPARE(defaults.code, 0);
        QTemporaryDir dir;
        QFile file(dir.filePath("defaults.json"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(defaults.out.toUtf8());
        file.close();
        for (const char* command : {"params", "plan"}) {
            Result check = runCli({command, file.fileName()});
            QVERIFY2(check.code == 0, qPrintable(command + (": " + check.err)));
        }
        Result full = runCli({"config", file.fileName()});
        QCOMPARE(full.code, 2);
        QVERIFY2(full.err.contains("data.vocab_size"), qPrintable(full.err));
    }

    void missingConfigFileExitsWithTwo() {
        Result r = runCli({"run", "/nonexistent/config.json"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("/nonexistent/config.json"));
    }

    void publishedConfigCountsMatchTheirFigures() {
        Result r = runCli({"params", kConfigs + "/deepseek/config_671B.json", "--json"});
        QCOMPARE(r.code, 0);
        QJsonObject counts = lastJsonLine(r.out);
        QVERIFY(std::fabs(counts["total_params"].toDouble() / 671e9 - 1) < 0.002);
        QCOMPARE(counts["state_dict_tensors"].toInt(), 45395);
        r = runCli({"params", kConfigs + "/deepseek/config_236B.json", "--json"});
        QVERIFY(std::fabs(lastJsonLine(r.out)["total_params"].toDouble() / 236e9 - 1) < 0.002);
        QCOMPARE(lastJsonLine(r.out)["state_dict_tensors"].toInt(), 29102);
    }

    void killedRunIsInterruptedWithItsPoints() {
        QTemporaryDir store;
        QProcess process;
        process.start(kCli, {"run", kConfigs + "/tiny.json", "--set", "train.steps=100000", "--store", store.path()});
        QVERIFY(process.waitForStarted());
        // Wait until the store holds step 5, then kill without warning.
        std::string run_id;
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                RunStore reader(store.path().toStdString());
                auto runs = reader.listRuns();
                if (runs.empty()) return false;
                run_id = runs.front().run_id;
                return runs.front().steps >= 5;
            }(),
            60000);
        ::kill(static_cast<pid_t>(process.processId()), SIGKILL);
        process.waitForFinished();
        RunStore reader(store.path().toStdString());
        auto run = reader.findRun(run_id);
        QCOMPARE(run->status, std::string("interrupted"));
        auto losses = reader.metrics(run_id, "train/loss");
        QVERIFY(losses.size() >= 5);
        for (size_t i = 0; i < losses.size(); ++i) QCOMPARE(losses[i].step, int64_t(i + 1));
    }

    // The crash test of the store issue: SIGKILL mid-run, resume, and every loss of the
    // resumed curve equals the uninterrupted run's bit for bit (CPU, fp32). With the moments in
    // offload_dir's files too (and under offload all the weights' shards): the kill leaves its
    // scratch files, which are no record (the checkpoint is) and which the resumed run clears away.
    void killedRunResumesToTheSameLossesBitwise_data() {
        QTest::addColumn<QString>("offload");
        QTest::newRow("moments in memory") << QString("none");
        QTest::newRow("moments in offload_dir") << QString("optimizer");
        QTest::newRow("moments and weights in offload_dir") << QString("all");
    }
    void killedRunResumesToTheSameLossesBitwise() {
        QFETCH(QString, offload);
        const bool offloaded = offload != "none";
        QTemporaryDir store, scratch;
        // Long enough steps (seq_len 256, one thread) that the kill lands mid-run with seconds to spare.
        QStringList settings = {"--set", "train.steps=24", "--set", "train.checkpoint_every=3", "--set",
                                "train.seq_len=256", "--set", "runtime.threads=1"};
        if (offloaded)
            settings << "--set" << (offload == "all" ? "runtime.zero_stage=3" : "runtime.zero_stage=1") << "--set"
                     << "runtime.offload=" + offload << "--set" << "runtime.offload_dir=" + scratch.path();
        auto scratchFiles = [&] { return QDir(scratch.path()).entryList(QDir::Files); };
        Result reference = runCli(QStringList{"run", kConfigs + "/tiny.json", "--store", store.path()} + settings);
        QVERIFY2(reference.code == 0, qPrintable(reference.err));
        const std::string reference_id = lastJsonLine(reference.out)["run_id"].toString().toStdString();

        QProcess process;
        process.start(kCli, QStringList{"run", kConfigs + "/tiny.json", "--store", store.path()} + settings);
        QVERIFY(process.waitForStarted());
        const std::string run_id = waitForRun(store.path(), reference_id, 8, 60000);
        QVERIFY2(!run_id.empty(), "the run did not reach step 8 in time");
        QVERIFY2(process.state() == QProcess::Running, "the run ended before it could be killed");
        ::kill(static_cast<pid_t>(process.processId()), SIGKILL);
        process.waitForFinished();
        {
            RunStore reader(store.path().toStdString());
            QCOMPARE(reader.findRun(run_id)->status, std::string("interrupted"));
        }
        if (offloaded) QCOMPARE(scratchFiles().size(), offload == "all" ? 2 : 1);  // the killed rank's moments (and shards)
        Result resumed = runCli({"resume", QString::fromStdString(run_id), "--store", store.path()});
        QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
        QVERIFY2(scratchFiles().isEmpty(), qPrintable(scratchFiles().join(", ")));
        QVERIFY(resumed.err.contains("resuming"));
        QCOMPARE(lastJsonLine(resumed.out)["steps"].toInt(), 24);

        RunStore reader(store.path().toStdString());
        auto expected = reader.metrics(reference_id, "train/loss");
        auto got = reader.metrics(run_id, "train/loss");
        QCOMPARE(got.size(), size_t(24));  // no step twice, none missing
        for (size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].step, int64_t(i + 1));
            QVERIFY2(got[i].value == expected[i].value,
                     qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(got[i].value, 0, 'g', 17)
                                    .arg(expected[i].value, 0, 'g', 17)));
            QCOMPARE(got[i].tokens, expected[i].tokens);
        }
        QCOMPARE(reader.findRun(run_id)->status, std::string("completed"));
    }

    void aCorruptCheckpointIsSkippedForThePreviousOne() {
        QTemporaryDir store;
        Result first = runCli({"run", kConfigs + "/tiny.json", "--store", store.path(), "--set", "train.steps=6",
                               "--set", "train.checkpoint_every=2", "--set", "runtime.threads=1"});
        QCOMPARE(first.code, 0);
        const QString id = lastJsonLine(first.out)["run_id"].toString();
        const QString folder = store.path() + "/checkpoints/" + id;
        QVERIFY(QDir(folder).entryList(QDir::Dirs | QDir::NoDotAndDotDot).contains("step-00000006"));
        // The store lists every checkpoint written, with the SHA-256 of its trainer.json.
        {
            RunStore readback(store.path().toStdString());
            auto written = readback.checkpoints(id.toStdString());
            QCOMPARE(written.size(), size_t(3));
            QCOMPARE(written.back().step, int64_t(6));
            QFile trainer(folder + "/step-00000006/trainer.json");
            QVERIFY(trainer.open(QIODevice::ReadOnly));
            const QByteArray digest = QCryptographicHash::hash(trainer.readAll(), QCryptographicHash::Sha256).toHex();
            QCOMPARE(QByteArray::fromStdString(written.back().checksum), digest);
        }
        // Truncate the newest checkpoint's weights, as a crash in the middle of a write would.
        QFile weights(folder + "/step-00000006/model.safetensors");
        QVERIFY(weights.open(QIODevice::ReadWrite));
        QVERIFY(weights.resize(weights.size() / 2));
        weights.close();
        Result resumed = runCli({"resume", id, "--store", store.path()});
        QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
        QVERIFY2(resumed.err.contains("checksum mismatch"), qPrintable(resumed.err));
        QVERIFY2(resumed.err.contains("from step 4"), qPrintable(resumed.err));
    }

    void resumeExtendsARunAndRefusesWhatTheCheckpointCannotFollow() {
        QTemporaryDir store;
        Result first = runCli({"run", kConfigs + "/tiny.json", "--store", store.path(), "--set", "train.steps=4",
                               "--set", "train.eval_every=0", "--set", "runtime.threads=1"});
        QCOMPARE(first.code, 0);
        const QString id = lastJsonLine(first.out)["run_id"].toString();
        // Changes that would make the checkpoint mean something else: exit 2 naming the field.
        const QList<QPair<QString, QString>> refused = {
            {"model.dim=48", "model.dim"},
            {"data.concentration=0.5", "data.concentration"},
            {"train.seq_len=32", "train.seq_len"},
            {"train.micro_batch_size=4", "train.global_batch_size"},
        };
        for (const auto& [assignment, field] : refused) {
            Result r = runCli({"resume", id, "--store", store.path(), "--set", assignment});
            QVERIFY2(r.code == 2, qPrintable(assignment + ": " + r.err));
            QVERIFY2(r.err.contains(field), qPrintable(r.err));
            QVERIFY2(r.err.contains("checkpoint"), qPrintable(r.err));
        }
        // A bad field name is still a config error with a suggestion.
        Result typo = runCli({"resume", id, "--store", store.path(), "--set", "train.stpes=9"});
        QCOMPARE(typo.code, 2);
        QVERIFY2(typo.err.contains("train.steps"), qPrintable(typo.err));
        // The refusals wrote nothing: the run is still completed at step 4.
        RunStore readback(store.path().toStdString());
        QCOMPARE(readback.findRun(id.toStdString())->status, std::string("completed"));
        QCOMPARE(readback.findRun(id.toStdString())->steps, int64_t(4));
        // More steps and another split of the same global batch are fine.
        Result longer = runCli({"resume", id, "--store", store.path(), "--set", "train.steps=7", "--set",
                                "train.micro_batch_size=4", "--set", "train.gradient_accumulation_steps=4"});
        QVERIFY2(longer.code == 0, qPrintable(longer.err));
        QJsonObject summary = lastJsonLine(longer.out);
        QCOMPARE(summary["steps"].toInt(), 7);
        QCOMPARE(summary["micro_batch_size"].toInt(), 4);
        QCOMPARE(summary["tokens"].toInt(), 7 * 16 * 64);
        auto stored = readback.findRun(id.toStdString());
        QCOMPARE(stored->steps, int64_t(7));
        QVERIFY(QString::fromStdString(stored->config_json).contains("\"steps\": 7"));
        QCOMPARE(readback.metrics(id.toStdString(), "train/loss").size(), size_t(7));
    }

    // The published 16B config (15.7B parameters: 251 GB of fp32 training state) trains on 8
    // ranks of 80 GiB at seq_len 4096: not whole on each (stage 0), but with its routed experts
    // divided among the 8 (expert parallelism, before stage 3 in cost) and the feed-forward
    // parts recomputed; the planner names the layout and its micro-batch.
    void thePlannerSaysWhereThe16BConfigTrains() {
        Result r = runCli({"plan", kConfigs + "/deepseek/config_16B.json", "--json", "--set", "runtime.device=cuda", "--set",
                           "runtime.world_size=8", "--set", "runtime.memory_limit_mb=81920", "--set", "train.seq_len=4096",
                           "--set", "train.micro_batch_size=1"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject p = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(!p["fits"].toBool());
        QVERIFY(p["peak_bytes"].toDouble() > 3.0 * 81920.0 * 1024 * 1024);  // whole: over 240 GiB
        const QJsonObject cheapest = p["advice"].toObject()["cheapest"].toObject();
        QCOMPARE(cheapest["zero_stage"].toInt(), 0);
        QCOMPARE(cheapest["expert_parallel"].toInt(), 8);
        QCOMPARE(cheapest["activation_checkpointing"].toString(), QString("feedforward"));
        QVERIFY(cheapest["micro_batch_size"].toInt() >= 1);
        QVERIFY(cheapest["peak_bytes"].toDouble() <= 81920.0 * 1024 * 1024);
        Result text = runCli({"plan", kConfigs + "/deepseek/config_16B.json", "--set", "runtime.device=cuda", "--set",
                              "runtime.world_size=8", "--set", "runtime.memory_limit_mb=81920", "--set", "train.seq_len=4096",
                              "--set", "train.micro_batch_size=1"});
        QVERIFY2(text.out.contains("on 8 ranks: zero_stage 0, activation_checkpointing feedforward, expert_parallel 8"),
                 qPrintable(text.out));
    }

    // At expert_parallel 8 a rank of the 16B config holds the dense weights and an eighth of the
    // routed experts, by hand: 26 MoE layers x 64 experts x 3 x 2,048 x 1,408 = 14,394,851,328
    // routed parameters, of which it drops 7/8. A micro-batch of 4,096 tokens sends 6 routed
    // copies of 2,048 fp32 each, 7/8 of them off the rank, four times per MoE layer (there and
    // back, forward and backward): 4 x 26 x 4,096 x 6 x 2,048 x 4 x 7 / 8 bytes.
    void thePlannerCountsExpertParallelism() {
        Result params = runCli({"params", kConfigs + "/deepseek/config_16B.json", "--json"});
        QVERIFY2(params.code == 0, qPrintable(params.err));
        const double total = QJsonDocument::fromJson(params.out.toUtf8()).object()["total_params"].toDouble();
        const double routed = 26.0 * 64 * 3 * 2048 * 1408;
        QCOMPARE(routed, 14394851328.0);
        Result r = runCli({"plan", kConfigs + "/deepseek/config_16B.json", "--json", "--set", "runtime.world_size=8", "--set",
                           "runtime.expert_parallel=8", "--set", "train.seq_len=4096", "--set", "train.micro_batch_size=1"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject p = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(p["expert_parallel"].toInt(), 8);
        QCOMPARE(p["weight_bytes"].toDouble(), 4.0 * (total - routed * 7 / 8));
        QCOMPARE(p["optimizer_bytes"].toDouble(), 8.0 * (total - routed * 7 / 8));
        QCOMPARE(p["all_to_all_bytes_per_micro_batch"].toDouble(), 4.0 * 26 * 4096 * 6 * 2048 * 4 * 7 / 8);
    }

    // The 236B and 671B configs need their experts divided and every weight sharded: expert
    // parallelism at stage 3. On 80 GiB devices at seq_len 4096 the fewest ranks (powers of two)
    // that train them at m 1 are 64 (stage 3, EP 16) and 256 (stage 3, EP 8), with whole blocks
    // recomputed and the output head in chunks (with whole logits, [4,096 x vocab] in fp32 three
    // times, config_236B needed 128 ranks). At W 256 and EP 16 a rank of the 671B config holds 1/256 of the dense
    // parameters and 1/16 of its experts' share (1/256 of the routed ones): 58 MoE layers x 256
    // experts x 3 x 7,168 x 2,048 routed parameters by hand; the unit it gathers holds 1/16 of a
    // block's experts, 15/16 of 256 x 3 x 7,168 x 2,048 fewer than at EP 1.
    void thePlannerSaysWhereTheLargestConfigsTrain() {
        for (const auto& [name, ranks, ep] : std::vector<std::tuple<QString, int, int>>{{"config_236B", 64, 16},
                                                                                        {"config_671B", 256, 8}}) {
            Result r = runCli({"plan", kConfigs + "/deepseek/" + name + ".json", "--json", "--set", "runtime.device=cuda",
                               "--set", "runtime.world_size=8", "--set", "runtime.memory_limit_mb=81920", "--set",
                               "train.seq_len=4096", "--set", "train.micro_batch_size=1", "--set",
                               "train.gradient_accumulation_steps=64", "--set", "train.global_batch_size=null"});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            const QJsonObject fewest = QJsonDocument::fromJson(r.out.toUtf8()).object()["advice"].toObject()["fewest_ranks"].toObject();
            QCOMPARE(fewest["world_size"].toInt(), ranks);
            const QJsonObject layout = fewest["layout"].toObject();
            QCOMPARE(layout["zero_stage"].toInt(), 3);
            QCOMPARE(layout["expert_parallel"].toInt(), ep);
            QCOMPARE(layout["activation_checkpointing"].toString(), QString("full"));
            QVERIFY(layout["peak_bytes"].toDouble() <= 0.9 * 81920.0 * 1024 * 1024);
        }
        Result params = runCli({"params", kConfigs + "/deepseek/config_671B.json", "--json"});
        QVERIFY2(params.code == 0, qPrintable(params.err));
        const double total = QJsonDocument::fromJson(params.out.toUtf8()).object()["total_params"].toDouble();
        const double per_layer = 256.0 * 3 * 7168 * 2048, routed = 58 * per_layer;
        auto plan = [&](int ep) {
            Result r = runCli({"plan", kConfigs + "/deepseek/config_671B.json", "--json", "--set", "runtime.world_size=256",
                               "--set", "runtime.zero_stage=3", "--set", QString("runtime.expert_parallel=%1").arg(ep),
                               "--set", "train.seq_len=4096", "--set", "train.micro_batch_size=1"});
            if (r.code != 0) qFatal("%s", qPrintable(r.err));
            return QJsonDocument::fromJson(r.out.toUtf8()).object();
        };
        const QJsonObject divided = plan(16), whole = plan(1);
        const double held = std::ceil((total - routed) / 256) + routed / 16 / 16;
        QCOMPARE(divided["gradient_bytes"].toDouble(), 4.0 * held);
        QCOMPARE(divided["optimizer_bytes"].toDouble(), 8.0 * held);
        const double unit_divided = divided["weight_bytes"].toDouble() - divided["gradient_bytes"].toDouble();
        const double unit_whole = whole["weight_bytes"].toDouble() - whole["gradient_bytes"].toDouble();
        QCOMPARE(unit_whole - unit_divided, 4.0 * per_layer * 15 / 16);
    }

    // `export-hf RUN_ID` writes a Hugging Face directory of the run's newest checkpoint (or
    // --step N's); `init --from-hf` makes a run config of it whose run starts from those weights:
    // its eval equals the checkpoint's. Bad input is exit 2 naming it, with nothing written.
    void exportHfAndInitFromHfRoundTrip() {
        QTemporaryDir dir;
        const QString store = dir.filePath("store");
        Result r = runCli({"run", kConfigs + "/tiny.json", "--set", "train.steps=4", "--set", "train.checkpoint_every=2",
                           "--set", "train.eval_every=0", "--store", store});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString id = lastJsonLine(r.out)["run_id"].toString();
        const QString out = dir.filePath("hf");
        Result e = runCli({"export-hf", id, "--store", store, "--out", out, "--dtype", "fp32"});
        QVERIFY2(e.code == 0, qPrintable(e.err));
        QCOMPARE(e.out.trimmed(), out);
        QVERIFY2(e.err.contains("DeepseekV3ForCausalLM"), qPrintable(e.err));
        for (const char* file : {"config.json", "generation_config.json", "model.safetensors"})
            QVERIFY2(QFile::exists(out + "/" + file), file);
        const QString step2 = dir.filePath("hf-step2");
        QCOMPARE(runCli({"export-hf", id, "--step", "2", "--store", store, "--out", step2, "--shard-size", "100KB"}).code, 0);
        QVERIFY(QFile::exists(step2 + "/model.safetensors.index.json"));
        // Refusals: each exit 2, naming what is wrong, nothing written.
        Result exists = runCli({"export-hf", id, "--store", store, "--out", out});
        QCOMPARE(exists.code, 2);
        QVERIFY2(exists.err.contains("exists"), qPrintable(exists.err));
        Result no_step = runCli({"export-hf", id, "--step", "3", "--store", store, "--out", dir.filePath("x")});
        QCOMPARE(no_step.code, 2);
        QVERIFY2(no_step.err.contains("--step") && no_step.err.contains("2, 4"), qPrintable(no_step.err));
        Result no_run = runCli({"export-hf", "nosuchrun", "--store", store, "--out", dir.filePath("x")});
        QCOMPARE(no_run.code, 2);
        QVERIFY2(no_run.err.contains("nosuchrun"), qPrintable(no_run.err));
        Result size = runCli({"export-hf", id, "--store", store, "--out", dir.filePath("x"), "--shard-size", "big"});
        QCOMPARE(size.code, 2);
        QVERIFY2(size.err.contains("--shard-size"), qPrintable(size.err));
        QVERIFY(!QFile::exists(dir.filePath("x")));
        QVERIFY(!QFile::exists(dir.filePath("x.partial")));

        const QString config = dir.filePath("from-hf.json");
        Result init = runCli({"init", "--from-hf", out, kConfigs + "/tiny.json", "--out", config});
        QVERIFY2(init.code == 0, qPrintable(init.err));
        const QJsonObject written = QJsonDocument::fromJson([&] {
            QFile f(config);
            f.open(QIODevice::ReadOnly);
            return f.readAll();
        }()).object();
        QCOMPARE(written["train"].toObject()["init_from"].toString(), QDir(out).absolutePath());
        QCOMPARE(written["model"].toObject()["dim"].toInt(), 64);
        QCOMPARE(written["model"].toObject()["score_func"].toString(), QString("sigmoid"));
        const QString checkpoint = store + "/checkpoints/" + id + "/step-00000004";
        Result ours = runCli({"eval", kConfigs + "/tiny.json", "--checkpoint", checkpoint});
        Result imported = runCli({"eval", config, "--checkpoint", out});
        QVERIFY2(ours.code == 0 && imported.code == 0, qPrintable(ours.err + imported.err));
        QCOMPARE(lastJsonLine(imported.out)["loss"].toDouble(), lastJsonLine(ours.out)["loss"].toDouble());
        Result trained = runCli({"run", config, "--set", "train.steps=2", "--store", store});
        QVERIFY2(trained.code == 0, qPrintable(trained.err));
        // A model section the weights do not fit: exit 2 before the run, naming train.init_from.
        Result wrong = runCli({"run", config, "--set", "model.dim=32", "--store", store});
        QCOMPARE(wrong.code, 2);
        QVERIFY2(wrong.err.contains("train.init_from"), qPrintable(wrong.err));
        Result not_hf = runCli({"init", "--from-hf", dir.path(), "--out", dir.filePath("y.json")});
        QCOMPARE(not_hf.code, 2);
        QVERIFY2(not_hf.err.contains("--from-hf"), qPrintable(not_hf.err));
        QVERIFY(!QFile::exists(dir.filePath("y.json")));
    }

    // `noise-scale` at fixed weights: the parts and the critical batch of fresh weights (a file)
    // over the tiny preset's validation windows; a checkpoint directory works the same; a
    // missing file or a micro-batch too large for two of them is exit 2 naming it.
    void noiseScaleMeasuresTheCriticalBatchOfAWeightsFile() {
        QTemporaryDir dir;
        const QString weights = dir.filePath("w.safetensors");
        QCOMPARE(runCli({"init", kConfigs + "/tiny.json", "--out", weights}).code, 0);
        Result r = runCli({"noise-scale", kConfigs + "/tiny.json", "--checkpoint", weights, "--micro-batch-size", "2",
                           "--set", "train.eval_windows=16", "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        for (const char* key : {"grad_sq", "trace", "critical_batch_sequences", "critical_batch_tokens", "micro_batches"})
            QVERIFY2(j.contains(key), key);
        QCOMPARE(j["micro_batches"].toInt(), 8);
        QVERIFY(j["trace"].toDouble() > 0);
        const QString checkpoint_dir = dir.filePath("step");
        QVERIFY(QDir().mkpath(checkpoint_dir));
        QVERIFY(QFile::copy(weights, checkpoint_dir + "/model.safetensors"));
        Result from_dir = runCli({"noise-scale", kConfigs + "/tiny.json", "--checkpoint", checkpoint_dir, "--micro-batch-size",
                                  "2", "--set", "train.eval_windows=16", "--json"});
        QCOMPARE(from_dir.code, 0);
        QCOMPARE(from_dir.out, r.out);  // the same weights, the same numbers
        Result text = runCli({"noise-scale", kConfigs + "/tiny.json", "--checkpoint", weights, "--set", "train.eval_windows=16"});
        QVERIFY2(text.out.contains("critical batch:"), qPrintable(text.out));
        Result missing = runCli({"noise-scale", kConfigs + "/tiny.json", "--checkpoint", dir.filePath("none.safetensors")});
        QCOMPARE(missing.code, 2);
        QVERIFY2(missing.err.contains("none.safetensors"), qPrintable(missing.err));
        Result too_large = runCli({"noise-scale", kConfigs + "/tiny.json", "--checkpoint", weights, "--micro-batch-size", "9",
                                   "--set", "train.eval_windows=16"});
        QCOMPARE(too_large.code, 2);
        QVERIFY2(too_large.err.contains("two micro-batches"), qPrintable(too_large.err));
    }

    void planAndExploreAnswerWhichSplitToUse() {
        Result plan = runCli({"plan", kConfigs + "/tiny.json", "--json", "--set", "runtime.memory_limit_mb=64"});
        QVERIFY2(plan.code == 0, qPrintable(plan.err));
        QJsonObject p = QJsonDocument::fromJson(plan.out.toUtf8()).object();
        for (const char* key : {"weight_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes", "peak_bytes",
                                "limit_bytes", "fits", "largest_fitting_micro_batch"})
            QVERIFY2(p.contains(key), key);
        QCOMPARE(p["limit_bytes"].toDouble(), 64.0 * 1024 * 1024);
        QCOMPARE(p["optimizer_bytes"].toDouble(), 2 * p["weight_bytes"].toDouble());
        QVERIFY(p["fits"].toBool());
        QCOMPARE(runCli({"plan", kConfigs + "/tiny.json", "--set", "train.micro_batch_size=0"}).code, 2);

        Result explore = runCli({"explore", kConfigs + "/tiny.json", "--json", "--steps", "1"});
        QVERIFY2(explore.code == 0, qPrintable(explore.err));
        QJsonObject e = QJsonDocument::fromJson(explore.out.trimmed().split('\n').last().toUtf8()).object();
        QJsonArray rows = e["rows"].toArray();
        QCOMPARE(rows.size(), 5);  // m = 1, 2, 4, 8, 16 of the global batch 16
        for (const auto& value : rows) {
            QJsonObject row = value.toObject();
            QCOMPARE(row["micro_batch_size"].toInt() * row["gradient_accumulation_steps"].toInt(), 16);
            for (const char* key : {"tokens_per_s", "measured_peak_bytes", "estimated_peak_bytes", "fits"})
                QVERIFY2(row.contains(key), key);
        }
        QVERIFY(e["recommended"].isObject());
        QVERIFY(explore.err.contains("recommended: --set train.micro_batch_size="));

        // Over the memory layouts too: every stage and recomputation mode at each split (two
        // ranks, a global batch of 4: m = 1 and 2), the recommendation naming its layout.
        Result layouts = runCli({"explore", kConfigs + "/tiny.json", "--json", "--steps", "1", "--layouts", "--set",
                                 "runtime.world_size=2", "--set", "train.micro_batch_size=2", "--set",
                                 "train.gradient_accumulation_steps=1"});
        QVERIFY2(layouts.code == 0, qPrintable(layouts.err));
        const QJsonObject l = QJsonDocument::fromJson(layouts.out.trimmed().split('\n').last().toUtf8()).object();
        QSet<QString> seen;
        for (const auto& value : l["rows"].toArray()) {
            const QJsonObject row = value.toObject();
            QVERIFY(row["fits"].toBool());
            seen.insert(QString("%1 %2 %3").arg(row["zero_stage"].toInt()).arg(row["activation_checkpointing"].toString())
                            .arg(row["micro_batch_size"].toInt()));
        }
        QCOMPARE(seen.size(), 24);  // 4 stages x 3 recomputation modes x 2 splits
        QVERIFY(seen.contains("3 full 1") && seen.contains("0 none 2"));
        QVERIFY(l["recommended"].toObject().contains("zero_stage"));
        QVERIFY2(layouts.err.contains("--set runtime.zero_stage="), qPrintable(layouts.err));
    }

    void theLargestPublishedModelIsRefusedOnThisMachineWithTheEstimate() {
        Result r = runCli({"run", kConfigs + "/deepseek/config_671B.json", "--set", "data.vocab_size=256", "--set",
                           "runtime.device=cpu", "--set", "train.micro_batch_size=1", "--set", "train.seq_len=256"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("the planner puts this config at") && r.err.contains("GiB"), qPrintable(r.err));
        QVERIFY2(r.err.contains("even micro_batch_size 1 needs"), qPrintable(r.err));
    }

    void interruptStopsCleanlyWithCode130() {
        QTemporaryDir store;
        QProcess process;
        process.start(kCli, {"run", kConfigs + "/tiny.json", "--set", "train.steps=100000", "--store", store.path()});
        QVERIFY(process.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                RunStore reader(store.path().toStdString());
                auto runs = reader.listRuns();
                return !runs.empty() && runs.front().steps >= 2;
            }(),
            60000);
        ::kill(static_cast<pid_t>(process.processId()), SIGINT);
        QVERIFY(process.waitForFinished(60000));
        QCOMPARE(process.exitCode(), 130);
        QCOMPARE(lastJsonLine(QString::fromUtf8(process.readAllStandardOutput()))["status"].toString(),
                 QString("interrupted"));
        RunStore reader(store.path().toStdString());
        QCOMPARE(reader.listRuns().front().status, std::string("interrupted"));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
