// Launched processes: the launcher's variables, the refusal of CPU process ranks, and the
// TCPStore rendezvous through which GPU process ranks meet (real c10d, on the loopback).
#include <QtTest/QtTest>

#include "../free_tcp_port.h"
#include "../reference_missing.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <set>
#include <thread>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <filesystem>
#include <fstream>

#include "comm/rendezvous.h"
#include "session/launch_agreement.h"
#include "comm/rendezvous_abort_signal.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"
#include "trainbench/process_launch.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

using Environment = std::map<std::string, std::string>;

std::optional<ProcessLaunch> launchFrom(const Environment& env) {
    return processLaunchFromEnvironment([&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    });
}

// The ConfigError's field and message for `env`; fails the test when none is thrown.
std::pair<std::string, std::string> refusal(const Environment& env) {
    try {
        launchFrom(env);
    } catch (const ConfigError& e) {
        return {e.path(), e.what()};
    }
    return {"(accepted)", ""};
}

}  // namespace

class TestProcessLaunch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The launch agreement between two ranks (threads meeting in a HashStore): identical
    // identities pass; a config field, the program or a data file that differs is refused on both
    // ranks alike, each naming rank 1 and what differs (the field with both values, the file).
    void theLaunchAgreementNamesWhatDiffers() {
        QTemporaryDir dir;
        const std::string data = (std::filesystem::path(dir.path().toStdString()) / "tokens.txt").string();
        std::ofstream(data) << "the same text on both ranks";
        RunConfig config = builtinTinyConfig();
        config.data.source = "text";
        config.data.path = data;
        const std::string same = launchIdentity(config);
        QCOMPARE(launchIdentity(config), same);  // deterministic
        auto agree = [](const std::string& first, const std::string& second) {
            c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::HashStore>();
            std::vector<std::string> errors(2);
            std::vector<std::thread> ranks;
            for (int r = 0; r < 2; ++r)
                ranks.emplace_back([&, r] {
                    ProcessLaunch launch;
                    launch.rank = r;
                    launch.world_size = 2;
                    try {
                        requireSameLaunch(*store, launch, r == 0 ? first : second, std::chrono::seconds(30));
                    } catch (const ConfigError& e) {
                        errors[r] = e.path() + "|" + e.what();
                    }
                });
            for (auto& t : ranks) t.join();
            if (errors[0] != errors[1]) return std::string("ranks disagree: ") + errors[0] + " / " + errors[1];
            return errors[0];
        };
        QCOMPARE(agree(same, same), std::string());

        RunConfig other_seed = config;
        other_seed.train.seed = 7;
        const std::string seed = agree(same, launchIdentity(other_seed));
        QVERIFY2(seed.rfind("train.seed|rank 1 of 2 was started with another config than rank 0: train.seed: 7 vs 0", 0) == 0,
                 seed.c_str());

        std::string other_program = same;
        const size_t at = other_program.find("\"program\":\"") + 11;
        other_program[at] = other_program[at] == '0' ? '1' : '0';
        const std::string program = agree(same, other_program);
        QVERIFY2(program.find("runs another build of trainbench-cli than rank 0") != std::string::npos, program.c_str());

        std::ofstream(data) << "other text, two bytes longer!";
        const std::string files = agree(same, launchIdentity(config));
        QVERIFY2(files.rfind("data.path|rank 1 of 2 reads other data than rank 0 (data[0].bytes: 29 vs 27", 0) == 0,
                 files.c_str());
    }

    void aPlainStartIsNotALaunch() {
        QVERIFY(!launchFrom({}).has_value());
        QVERIFY(!launchFrom({{"WORLD_SIZE", "1"}, {"RANK", "0"}}).has_value());  // torchrun with one process
        QVERIFY(!launchFrom({{"SLURM_NTASKS", "1"}, {"SLURM_PROCID", "0"}}).has_value());
    }

    void torchrunVariablesAreRead() {
        const auto launch = launchFrom({{"WORLD_SIZE", "8"}, {"RANK", "5"}, {"LOCAL_RANK", "1"},
                                        {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}});
        QVERIFY(launch.has_value());
        QCOMPARE(launch->world_size, 8);
        QCOMPARE(launch->rank, 5);
        QCOMPARE(launch->local_rank, 1);
        QCOMPARE(launch->local_world_size, 4);
        QCOMPARE(launch->master_addr, std::string("node0"));
        QCOMPARE(launch->master_port, 29500);
        QCOMPARE(launch->launcher, std::string("torchrun"));
    }

    void slurmVariablesAreRead() {
        const auto launch = launchFrom({{"SLURM_NTASKS", "16"}, {"SLURM_PROCID", "9"}, {"SLURM_LOCALID", "1"},
                                        {"SLURM_NTASKS_PER_NODE", "8"}, {"MASTER_ADDR", "10.0.0.1"},
                                        {"MASTER_PORT", "12345"}});
        QVERIFY(launch.has_value());
        QCOMPARE(launch->world_size, 16);
        QCOMPARE(launch->rank, 9);
        QCOMPARE(launch->local_rank, 1);
        QCOMPARE(launch->local_world_size, 8);
        QCOMPARE(launch->launcher, std::string("slurm"));
    }

    // Each bad or missing variable is named, with what to do.
    void badVariablesAreNamed() {
        const Environment good{{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
        auto with = [&](const std::string& name, const char* value) {
            Environment env = good;
            if (value) env[name] = value;
            else env.erase(name);
            return refusal(env);
        };
        QCOMPARE(with("RANK", "2").first, std::string("RANK"));  // not below WORLD_SIZE
        QVERIFY(with("RANK", "2").second.find("WORLD_SIZE=2") != std::string::npos);
        QCOMPARE(with("RANK", "one").first, std::string("RANK"));
        QCOMPARE(with("RANK", nullptr).first, std::string("RANK"));
        QCOMPARE(with("WORLD_SIZE", "0").first, std::string("WORLD_SIZE"));
        QCOMPARE(with("MASTER_ADDR", nullptr).first, std::string("MASTER_ADDR"));
        QVERIFY(with("MASTER_ADDR", nullptr).second.find("torchrun") != std::string::npos);
        QCOMPARE(with("MASTER_PORT", "70000").first, std::string("MASTER_PORT"));
        QCOMPARE(with("MASTER_PORT", nullptr).first, std::string("MASTER_PORT"));
        const auto slurm = refusal({{"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "0"}, {"MASTER_PORT", "1"}});
        QCOMPARE(slurm.first, std::string("MASTER_ADDR"));
        QVERIFY(slurm.second.find("scontrol show hostnames") != std::string::npos);
    }

    // A launched rank takes the launcher's world size; a config that says another is refused
    // before anything starts, naming the field.
    void aLaunchedRankKeepsTheLaunchersWorldSize() {
        RunConfig config = builtinTinyConfig();
        config.runtime.device = "cpu";
        SessionOptions options;
        options.launch = launchFrom({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"},
                                     {"MASTER_PORT", "29500"}});
        config.runtime.world_size = 4;  // disagrees with the launcher
        try {
            TrainingSession session(config, options);
            QFAIL("a world size unlike the launcher's was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(e.path(), std::string("runtime.world_size"));
        }
    }

    // Two ranks meet through c10d's TCPStore on the loopback (rank 0 serves, rank 1 connects)
    // and see each other's keys; a rank whose peers never come gets a named error in time.
    void ranksMeetThroughTcpStore() {
        const int port = freeTcpPort();
        std::vector<std::string> seen(2);
        std::vector<std::string> errors(2);
        // Kept until both ranks are done: rank 0's store is the server the other reads from.
        c10::intrusive_ptr<c10d::Store> stores[2];
        std::vector<std::thread> ranks;
        for (int r = 0; r < 2; ++r)
            ranks.emplace_back([&, r] {
                try {
                    ProcessLaunch launch;
                    launch.rank = r;
                    launch.world_size = 2;
                    launch.master_addr = "127.0.0.1";
                    launch.master_port = port;
                    auto store = stores[r] = processRendezvous(launch, std::chrono::seconds(30));
                    const std::string mine = "from rank " + std::to_string(r);
                    store->set("key" + std::to_string(r), std::vector<uint8_t>(mine.begin(), mine.end()));
                    const auto other = store->get("key" + std::to_string(1 - r));
                    seen[r] = std::string(other.begin(), other.end());
                } catch (const std::exception& e) {
                    errors[r] = e.what();
                }
            });
        for (auto& t : ranks) t.join();
        QVERIFY2(errors[0].empty() && errors[1].empty(), (errors[0] + " / " + errors[1]).c_str());
        QCOMPARE(seen[0], std::string("from rank 1"));
        QCOMPARE(seen[1], std::string("from rank 0"));

        ProcessLaunch alone;
        alone.rank = 1;
        alone.world_size = 2;
        alone.master_addr = "127.0.0.1";
        alone.master_port = freeTcpPort();  // nobody serves it
        try {
            processRendezvous(alone, std::chrono::seconds(2));
            QFAIL("a rendezvous without rank 0 succeeded");
        } catch (const std::exception& e) {
            QVERIFY2(std::string(e.what()).find("MASTER_ADDR:MASTER_PORT") != std::string::npos, e.what());
        }
    }

    // A rank that ends early raises the abort in the shared store; the other process's watcher
    // hears it within a few polls, with the reason, and the raising rank does not hear itself.
    void anAbortReachesTheOtherProcessThroughTheStore() {
        const int port = freeTcpPort();
        c10::intrusive_ptr<c10d::Store> stores[2];
        std::thread server([&] {
            ProcessLaunch launch;
            launch.world_size = 2;
            launch.master_addr = "127.0.0.1";
            launch.master_port = port;
            stores[0] = processRendezvous(launch, std::chrono::seconds(30));
        });
        ProcessLaunch client;
        client.rank = 1;
        client.world_size = 2;
        client.master_addr = "127.0.0.1";
        client.master_port = port;
        stores[1] = processRendezvous(client, std::chrono::seconds(30));
        server.join();

        std::mutex mutex;
        std::condition_variable heard;
        std::string reasons[2];
        auto listener = [&](int rank) {
            return [&, rank](const std::string& reason) {
                std::lock_guard lock(mutex);
                reasons[rank] = reason;
                heard.notify_all();
            };
        };
        RendezvousAbortSignal rank0(stores[0], listener(0), std::chrono::milliseconds(50));
        RendezvousAbortSignal rank1(stores[1], listener(1), std::chrono::milliseconds(50));
        rank1.raise("rank 1: stop requested");
        std::unique_lock lock(mutex);
        QVERIFY(heard.wait_for(lock, std::chrono::seconds(10), [&] { return !reasons[0].empty(); }));
        QCOMPARE(reasons[0], std::string("rank 1: stop requested"));
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // several of rank 1's polls
        lock.lock();
        QVERIFY(reasons[1].empty());
    }

    // torchrun's variables for its agent's store and restarts.
    void torchrunsAgentStoreAndAttemptAreRead() {
        Environment env{{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
        auto plain = launchFrom(env);
        QVERIFY(plain && !plain->agent_store);
        QCOMPARE(plain->restart_count, 0);
        env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
        env["TORCHELASTIC_RESTART_COUNT"] = "3";
        auto agent = launchFrom(env);
        QVERIFY(agent && agent->agent_store);
        QCOMPARE(agent->restart_count, 3);
        QCOMPARE(rendezvousPrefix(*agent), std::string("trainbench/attempt_3"));
        env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
        QVERIFY(!launchFrom(env)->agent_store);
        env["TORCHELASTIC_RESTART_COUNT"] = "x";
        QCOMPARE(refusal(env).first, std::string("TORCHELASTIC_RESTART_COUNT"));
    }

    // The real torchrun of the torch environment starts two CPU processes of the CLI, which meet
    // through the store (the agent's by default; rank 0's when the agent keeps its own) and exit 0
    // before any device or training.
    void theCliMeetsItsPeersUnderTorchrun_data() {
        QTest::addColumn<bool>("agent_serves");
        QTest::newRow("the agent's store") << true;
        QTest::newRow("rank 0's store") << false;
    }
    void theCliMeetsItsPeersUnderTorchrun() {
        QFETCH(bool, agent_serves);
        if (!QFileInfo::exists(TRAINBENCH_TORCHRUN)) TRAINBENCH_REFERENCE_MISSING("no torchrun next to this build's torch");
        QProcess torchrun;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* name : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_NTASKS"})
            env.remove(name);
        QStringList args{"--nproc-per-node=2", "--no-python"};
        if (agent_serves) {
            args << QString("--master-port=%1").arg(freeTcpPort());
        } else {
            // The c10d rendezvous told not to share its store: MASTER_PORT is then rank 0's to serve.
            env.insert("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1");
            args << "--rdzv-backend=c10d" << QString("--rdzv-endpoint=127.0.0.1:%1").arg(freeTcpPort());
        }
        args << TRAINBENCH_CLI << "run" << TRAINBENCH_SOURCE_DIR "/configs/tiny.json" << "--check-rendezvous"
             << "--set" << "runtime.comm_timeout_s=60";
        torchrun.setProcessEnvironment(env);
        torchrun.start(TRAINBENCH_TORCHRUN, args);
        QVERIFY(torchrun.waitForFinished(120000));
        const QString out = QString::fromUtf8(torchrun.readAllStandardOutput());
        const QString err = QString::fromUtf8(torchrun.readAllStandardError());
        QVERIFY2(torchrun.exitCode() == 0, qPrintable(out + err));
        int met = 0;
        std::set<int> ranks;
        for (const QString& line : out.split('\n')) {
            const int brace = line.indexOf('{');
            if (brace < 0) continue;
            const QJsonObject report = QJsonDocument::fromJson(line.mid(brace).toUtf8()).object();
            if (report["rendezvous"].toString() != "ok") continue;
            ++met;
            ranks.insert(report["rank"].toInt());
            QCOMPARE(report["world_size"].toInt(), 2);
            QCOMPARE(report["launcher"].toString(), QString("torchrun"));
            QCOMPARE(report["store"].toString(), agent_serves ? QString("agent") : QString("rank 0"));
        }
        QVERIFY2(met == 2, qPrintable(out + err));
        QCOMPARE(ranks, (std::set<int>{0, 1}));
        // No rank bound MASTER_PORT beside the agent (torch logs the failed bind it forgives).
        QVERIFY2(!err.contains("failed to bind"), qPrintable(err));
    }

    // Without a launcher the check is refused as bad input (exit 2), naming the flag.
    void aRendezvousCheckWithoutALauncherIsRefused() {
        QProcess cli;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* name : {"WORLD_SIZE", "RANK", "SLURM_NTASKS"}) env.remove(name);
        cli.setProcessEnvironment(env);
        cli.start(TRAINBENCH_CLI, {"run", TRAINBENCH_SOURCE_DIR "/configs/tiny.json", "--check-rendezvous"});
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 2);
        QVERIFY(QString::fromUtf8(cli.readAllStandardError()).contains("--check-rendezvous"));
    }
};

QTEST_GUILESS_MAIN(TestProcessLaunch)
#include "test_process_launch.moc"
