// Several processes suite: CPU ranks as processes under the torch environment's torchrun (and
// under Slurm's variables set by hand), each a trainbench-cli meeting the others through c10d's
// Gloo. Every launch is checked against the same split on rank threads of one process (the
// in-process hub), step by step; and the faults a launch meets: a rank killed or stopped mid-run,
// a rank that never comes, a rank started with another config, SIGTERM to torchrun, a resume on
// another process count.
#include <QtTest/QtTest>

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "../free_tcp_port.h"
#include "../reference_missing.h"
#include "cli_process.h"
#include "trainbench/metric_keys.h"
#include "trainbench/run_store.h"

using namespace trainbench;

namespace {

const QString kTorchPython = QStringLiteral(TRAINBENCH_TORCH_PYTHON);

// The environment of a child without any launcher's variables of this test's own process.
QProcessEnvironment cleanEnvironment() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                             "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "TORCHELASTIC_USE_AGENT_STORE"})
        env.remove(name);
    return env;
}

// torchrun's arguments for `nproc` processes per node running trainbench-cli `cli_args`.
QStringList torchrunArguments(int nproc, int port, const QStringList& cli_args, int nnodes = 1, int node_rank = 0) {
    QStringList args{"-m", "torch.distributed.run", QString("--nproc-per-node=%1").arg(nproc),
                     "--master-addr=127.0.0.1", QString("--master-port=%1").arg(port)};
    if (nnodes > 1) args << QString("--nnodes=%1").arg(nnodes) << QString("--node-rank=%1").arg(node_rank);
    return args << "--no-python" << kCli << cli_args;
}

Result finish(QProcess& process, int timeout_ms) {
    if (!process.waitForFinished(timeout_ms)) {
        process.kill();
        process.waitForFinished();
        return {-2, QString::fromUtf8(process.readAllStandardOutput()),
                "did not finish in time\n" + QString::fromUtf8(process.readAllStandardError())};
    }
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
            QString::fromUtf8(process.readAllStandardOutput()), QString::fromUtf8(process.readAllStandardError())};
}

void startTorchrun(QProcess& process, int nproc, int port, const QStringList& cli_args, int nnodes = 1,
                   int node_rank = 0) {
    process.setProcessEnvironment(cleanEnvironment());
    process.start(kTorchPython, torchrunArguments(nproc, port, cli_args, nnodes, node_rank));
    if (!process.waitForStarted()) qFatal("torchrun did not start");
}

Result torchrun(int nproc, const QStringList& cli_args, int timeout_ms = 240000) {
    QProcess process;
    startTorchrun(process, nproc, freeTcpPort(), cli_args);
    return finish(process, timeout_ms);
}

// The CLI started as rank `rank` of `world` by hand, with `variables` (torchrun's or Slurm's).
void startRank(QProcess& process, const QMap<QString, QString>& variables, const QStringList& cli_args) {
    QProcessEnvironment env = cleanEnvironment();
    for (auto it = variables.begin(); it != variables.end(); ++it) env.insert(it.key(), it.value());
    process.setProcessEnvironment(env);
    process.start(kCli, cli_args);
    if (!process.waitForStarted()) qFatal("the CLI did not start");
}

// The run id in the summary line rank 0 printed (the other ranks print none).
std::string runIdOf(const Result& r) { return lastJsonLine(r.out)["run_id"].toString().toStdString(); }

int summaryLines(const QString& out) {
    int lines = 0;
    for (const QString& line : out.split('\n'))
        if (line.startsWith("{\"final_loss\"")) ++lines;
    return lines;
}

// The pid of the CLI process that is rank `rank` of the launch on `port` (its environment says).
pid_t rankProcess(int port, int rank) {
    for (const auto& entry : QDir("/proc").entryList(QDir::Dirs)) {
        bool numeric = false;
        const pid_t pid = entry.toInt(&numeric);
        if (!numeric) continue;
        std::ifstream environ("/proc/" + entry.toStdString() + "/environ", std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
        std::ifstream cmdline("/proc/" + entry.toStdString() + "/cmdline", std::ios::binary);
        const std::string command((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
        auto has = [&](const std::string& variable) { return text.find('\0' + variable + '\0') != std::string::npos; };
        if (command.find("trainbench-cli") != std::string::npos &&
            has("MASTER_PORT=" + std::to_string(port)) && has("RANK=" + std::to_string(rank)))
            return pid;
    }
    return -1;
}

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0 && QFile::exists(QString("/proc/%1").arg(pid)); }

// Every step's loss and gradient norm of `got` against `expected`: equal bit for bit when
// `relative` is 0, else within it.
void compareCurves(RunStore& store, const std::string& expected_id, const std::string& got_id, int64_t steps,
                   double relative) {
    for (const char* key : {metric::kLoss, metric::kGradNorm}) {
        const auto expected = store.metrics(expected_id, key);
        const auto got = store.metrics(got_id, key);
        QCOMPARE(int64_t(got.size()), steps);
        QCOMPARE(int64_t(expected.size()), steps);
        for (size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].step, int64_t(i + 1));
            const double a = got[i].value, b = expected[i].value;
            const bool ok = relative == 0 ? a == b : std::abs(a - b) <= relative * std::abs(b);
            QVERIFY2(ok, qPrintable(QString("%1 at step %2: processes %3, threads %4")
                                        .arg(key)
                                        .arg(i + 1)
                                        .arg(a, 0, 'g', 17)
                                        .arg(b, 0, 'g', 17)));
        }
    }
}

QStringList runArguments(const QString& store, const QStringList& settings) {
    QStringList args{"run", kConfigs + "/tiny.json", "--store", store, "--set", "runtime.threads=1", "--set",
                     "train.eval_every=0"};
    for (const QString& s : settings) args << "--set" << s;
    return args;
}

// `resume run_id` under torchrun (2 processes) completes the run, every step's loss and
// gradient norm equal bit for bit to those of `reference_id`, the same run that nothing interrupted.
void resumeBitwise(const QString& store, const std::string& reference_id, const std::string& run_id, int64_t steps) {
    Result resumed = torchrun(2, {"resume", QString::fromStdString(run_id), "--store", store});
    QVERIFY2(resumed.code == 0, qPrintable((resumed.out + resumed.err).right(2500)));
    RunStore reader(store.toStdString());
    QCOMPARE(reader.findRun(run_id)->status, std::string("completed"));
    compareCurves(reader, reference_id, run_id, steps, 0.0);
}

}  // namespace

class TestCliProcesses : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        if (!QFileInfo::exists(kTorchPython)) TRAINBENCH_REFERENCE_MISSING("no python next to this build's torch");
    }

    // `plan` writes the torchrun line that starts the config as processes: run as written (with
    // this build's CLI and torch environment for the names on the PATH), it trains the run.
    void thePlansTorchrunLineTrains() {
        QTemporaryDir store;
        const QStringList sets{"--set", "runtime.world_size=2", "--set", "train.steps=2", "--set", "runtime.threads=1",
                               "--set", "train.eval_every=0"};
        Result plan = runCli(QStringList{"plan", kConfigs + "/tiny.json", "--json"} + sets);
        QCOMPARE(plan.code, 0);
        const QString line = lastJsonLine(plan.out)["launch"].toObject()["torchrun"].toString();
        QVERIFY2(line.startsWith("torchrun --nproc-per-node 2 --no-python trainbench-cli run "), qPrintable(line));
        QStringList words = line.split(' ', Qt::SkipEmptyParts);
        words.removeFirst();  // torchrun: the torch environment's, as a module
        words.replace(words.indexOf("trainbench-cli"), kCli);
        QProcess launch;
        QProcessEnvironment env = cleanEnvironment();
        env.insert("TRAINBENCH_STORE", store.path());
        launch.setProcessEnvironment(env);
        launch.start(kTorchPython, QStringList{"-m", "torch.distributed.run", QString("--master-port=%1").arg(freeTcpPort())} +
                                       words);
        Result r = finish(launch, 240000);
        QVERIFY2(r.code == 0, qPrintable((r.out + r.err).right(2500)));
        QCOMPARE(lastJsonLine(r.out)["world_size"].toInt(), 2);
        QCOMPARE(lastJsonLine(r.out)["steps"].toInt(), 2);
        QCOMPARE(RunStore(store.path().toStdString()).listRuns().size(), size_t(1));
    }

    // The conformance splits as processes against the same split as threads, every step.
    void processesTrainAsThreadsDo_data() {
        QTest::addColumn<int>("world");
        QTest::addColumn<QStringList>("settings");
        QTest::addColumn<double>("relative");
        // Two ranks: a sum of two is the same whichever rank adds first, so Gloo's reductions and
        // the hub's (rank order) give the same bits.
        QTest::newRow("W2 ZeRO 0") << 2 << QStringList{} << 0.0;
        QTest::newRow("W2 ZeRO 1") << 2 << QStringList{"runtime.zero_stage=1"} << 0.0;
        QTest::newRow("W2 ZeRO 2") << 2 << QStringList{"runtime.zero_stage=2"} << 0.0;
        QTest::newRow("W2 ZeRO 3") << 2 << QStringList{"runtime.zero_stage=3"} << 0.0;
        QTest::newRow("W2 EP 2") << 2 << QStringList{"runtime.expert_parallel=2"} << 0.0;
        QTest::newRow("W2 ZeRO 1 offload optimizer")
            << 2 << QStringList{"runtime.zero_stage=1", "runtime.offload=optimizer"} << 0.0;
        QTest::newRow("W2 ZeRO 3 offload all") << 2 << QStringList{"runtime.zero_stage=3", "runtime.offload=all"} << 0.0;
        QTest::newRow("W2 bf16 ZeRO 2") << 2 << QStringList{"runtime.dtype=bf16", "runtime.zero_stage=2"} << 0.0;
        QTest::newRow("W2 fp8 ZeRO 1") << 2 << QStringList{"runtime.dtype=fp8", "runtime.zero_stage=1"} << 0.0;
        // Each process its own files in one offload_dir (named by process and rank).
        QTest::newRow("W2 ZeRO 3 offload all to offload_dir, recomputed, unit order")
            << 2
            << QStringList{"runtime.zero_stage=3", "runtime.offload=all", "runtime.offload_dir={scratch}",
                           "runtime.activation_checkpointing=full", "runtime.window_schedule=unit"}
            << 0.0;
        // K grows 2 -> 4 -> 8 on the noise scale's estimate (the same decision on every rank, or
        // the collectives would not pair up); the last window is cut: 16, 32, 64, 64, 40 sequences.
        QTest::newRow("W2 adaptive K, incomplete last window")
            << 2
            << QStringList{"train.batch_policy=adaptive", "train.batch_adapt_threshold=1e-9",
                           "train.batch_adapt_dwell_tokens=1", "train.batch_adapt_max_accumulation=8",
                           "train.schedule=constant", "train.warmup_steps=0", "train.tokens=13824"}
            << 0.0;
        // Four ranks: Gloo's ring adds each chunk's four terms starting from another rank than
        // the hub's ((r0 + r1) + r2) + r3, so sums differ in their last bits; 1e-6 relative is
        // a few hundred fp32 roundings of headroom over three steps.
        QTest::newRow("W4 ZeRO 1") << 4 << QStringList{"runtime.zero_stage=1"} << 1e-6;
        QTest::newRow("W4 EP 2 ZeRO 2") << 4 << QStringList{"runtime.expert_parallel=2", "runtime.zero_stage=2"} << 1e-6;
    }
    void processesTrainAsThreadsDo() {
        QFETCH(int, world);
        QFETCH(QStringList, settings);
        QFETCH(double, relative);
        QTemporaryDir store, scratch;
        settings.replaceInStrings("{scratch}", scratch.path());
        settings << "train.steps=3" << "train.micro_batch_size=4";
        Result threads = runCli(runArguments(store.path(), settings + QStringList{QString("runtime.world_size=%1").arg(world)}));
        QVERIFY2(threads.code == 0, qPrintable(threads.err));
        Result processes = torchrun(world, runArguments(store.path(), settings));
        QVERIFY2(processes.code == 0, qPrintable(processes.out + processes.err));
        QCOMPARE(summaryLines(processes.out), 1);  // rank 0 speaks for the run
        QCOMPARE(lastJsonLine(processes.out)["world_size"].toInt(), world);
        RunStore reader(store.path().toStdString());
        QCOMPARE(reader.listRuns().size(), size_t(2));  // one record per launch: rank 0's
        const int64_t steps = lastJsonLine(threads.out)["steps"].toInt();
        QVERIFY(steps >= 3);
        compareCurves(reader, runIdOf(threads), runIdOf(processes), steps, relative);
        QVERIFY(QDir(scratch.path()).entryList(QDir::Files).isEmpty());  // every rank cleared its files
    }

    // Two torchrun agents as two nodes of two processes each, on this machine: the multi-node
    // path (node ranks, global ranks 0-3, the store served by node 0's agent, one writer).
    void twoNodesOfTwoProcesses() {
        QTemporaryDir store;
        const QStringList settings{"train.steps=3", "train.micro_batch_size=4", "runtime.zero_stage=2"};
        Result threads = runCli(runArguments(store.path(), settings + QStringList{"runtime.world_size=4"}));
        QVERIFY2(threads.code == 0, qPrintable(threads.err));
        const int port = freeTcpPort();
        QProcess node0, node1;
        startTorchrun(node0, 2, port, runArguments(store.path(), settings), 2, 0);
        startTorchrun(node1, 2, port, runArguments(store.path(), settings), 2, 1);
        Result first = finish(node0, 240000), second = finish(node1, 240000);
        QVERIFY2(first.code == 0, qPrintable(first.out + first.err));
        QVERIFY2(second.code == 0, qPrintable(second.out + second.err));
        QCOMPARE(summaryLines(first.out) + summaryLines(second.out), 1);
        RunStore reader(store.path().toStdString());
        QCOMPARE(reader.listRuns().size(), size_t(2));
        compareCurves(reader, runIdOf(threads), runIdOf(summaryLines(first.out) ? first : second), 3, 1e-6);
    }

    // Slurm's variables, set by hand as srun would: rank 0 serves the rendezvous store.
    void slurmVariablesStartTheSameRun() {
        QTemporaryDir store;
        const QStringList settings{"train.steps=3", "train.micro_batch_size=4", "runtime.zero_stage=1"};
        Result threads = runCli(runArguments(store.path(), settings + QStringList{"runtime.world_size=2"}));
        QVERIFY2(threads.code == 0, qPrintable(threads.err));
        const QString port = QString::number(freeTcpPort());
        QProcess ranks[2];
        for (int r = 0; r < 2; ++r)
            startRank(ranks[r],
                      {{"SLURM_NTASKS", "2"}, {"SLURM_PROCID", QString::number(r)}, {"SLURM_LOCALID", QString::number(r)},
                       {"SLURM_NTASKS_PER_NODE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}},
                      runArguments(store.path(), settings));
        Result lead = finish(ranks[0], 120000), other = finish(ranks[1], 120000);
        QVERIFY2(lead.code == 0 && other.code == 0, qPrintable(lead.err + other.err));
        QCOMPARE(summaryLines(other.out), 0);
        RunStore reader(store.path().toStdString());
        compareCurves(reader, runIdOf(threads), runIdOf(lead), 3, 0.0);
    }

    // A rank started with another seed is refused on every rank, naming the field, before
    // anything is trained or recorded (exit 2).
    void aRankWithAnotherConfigIsRefusedOnEveryRank() {
        QTemporaryDir store;
        const QString port = QString::number(freeTcpPort());
        QProcess ranks[2];
        for (int r = 0; r < 2; ++r)
            startRank(ranks[r],
                      {{"WORLD_SIZE", "2"}, {"RANK", QString::number(r)}, {"LOCAL_RANK", QString::number(r)},
                       {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}},
                      runArguments(store.path(), {"runtime.comm_timeout_s=60", QString("train.seed=%1").arg(r)}));
        for (auto& rank : ranks) {
            Result r = finish(rank, 120000);
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.contains("rank 1 of 2 was started with another config than rank 0") &&
                         r.err.contains("train.seed: 1 vs 0"),
                     qPrintable(r.err));
        }
        QCOMPARE(RunStore(store.path().toStdString()).listRuns().size(), size_t(0));
    }

    // kill -9 one rank mid-run: the other ends at once (runtime.comm_timeout_s is ten minutes
    // here), naming the lost rank and the collective; torchrun ends non-zero; the store shows
    // the run ended; `resume` under torchrun continues it, bitwise, to the losses of the same
    // run on threads that nothing interrupted.
    void aKilledRankEndsTheRunAndItResumesBitwise() {
        QTemporaryDir store;
        const QStringList settings{"train.steps=24", "train.checkpoint_every=3", "train.seq_len=256",
                                   "runtime.zero_stage=1", "runtime.comm_timeout_s=600"};
        Result threads = runCli(runArguments(store.path(), settings + QStringList{"runtime.world_size=2"}), 240000);
        QVERIFY2(threads.code == 0, qPrintable(threads.err));
        const std::string reference_id = runIdOf(threads);
        const int port = freeTcpPort();
        QProcess launch;
        startTorchrun(launch, 2, port, runArguments(store.path(), settings));
        const std::string run_id = waitForRun(store.path(), reference_id, 7);
        QVERIFY2(!run_id.empty(), "the run did not reach its step in time");
        const pid_t victim = rankProcess(port, 1);
        QVERIFY2(victim > 0, "rank 1's process was not found");
        ::kill(victim, SIGKILL);
        Result ended = finish(launch, 120000);  // far below the ten-minute timeout
        QVERIFY2(ended.code != 0 && ended.code != -2, qPrintable(ended.err.right(2500)));
        QVERIFY2(ended.err.contains("rank 1 of 2 is lost"), qPrintable(ended.err.right(2500)));
        QVERIFY2(ended.err.contains(QRegularExpression("(all_reduce|reduce_scatter|all_gather|broadcast) #\\d+")),
                 qPrintable(ended.err.right(2500)));
        {
            RunStore reader(store.path().toStdString());
            const std::string status = reader.findRun(run_id)->status;
            QVERIFY2(status == "failed" || status == "interrupted", status.c_str());
        }
        resumeBitwise(store.path(), reference_id, run_id, 24);
    }

    // SIGSTOP one rank: the other's collective times out (runtime.comm_timeout_s) and the roll
    // call names the stopped rank.
    void aStoppedRankIsNamedAfterTheTimeout() {
        QTemporaryDir store;
        const int port = freeTcpPort();
        QProcess launch;
        startTorchrun(launch, 2, port,
                      runArguments(store.path(), {"train.steps=400", "train.seq_len=128", "runtime.comm_timeout_s=4"}));
        QVERIFY2(!waitForRun(store.path(), "", 3).empty(), "the run did not reach step 3 in time");
        const pid_t stopped = rankProcess(port, 1), lead = rankProcess(port, 0);
        QVERIFY(stopped > 0 && lead > 0);
        ::kill(stopped, SIGSTOP);
        QTRY_VERIFY_WITH_TIMEOUT(!alive(lead), 120000);
        ::kill(stopped, SIGKILL);  // torchrun's SIGTERM waits behind the stop
        Result ended = finish(launch, 120000);
        QVERIFY(ended.code != 0);
        QVERIFY2(ended.err.contains("rank 1 of 2 is lost"), qPrintable(ended.err.right(2500)));
        QVERIFY2(ended.err.contains("failed ("), qPrintable(ended.err.right(2500)));
    }

    // SIGTERM to torchrun: it passes the signal on, every rank stops at the next boundary with
    // a checkpoint, the store shows the run interrupted, and `resume` finishes it bitwise.
    void sigtermToTorchrunCheckpointsAndResumes() {
        QTemporaryDir store;
        const QStringList settings{"train.steps=24", "train.checkpoint_every=100", "train.seq_len=256",
                                   "runtime.zero_stage=2"};
        Result threads = runCli(runArguments(store.path(), settings + QStringList{"runtime.world_size=2"}), 240000);
        QVERIFY2(threads.code == 0, qPrintable(threads.err));
        const std::string reference_id = runIdOf(threads);
        QProcess launch;
        startTorchrun(launch, 2, freeTcpPort(), runArguments(store.path(), settings));
        const std::string run_id = waitForRun(store.path(), reference_id, 4);
        QVERIFY2(!run_id.empty(), "the run did not reach its step in time");
        ::kill(static_cast<pid_t>(launch.processId()), SIGTERM);
        Result ended = finish(launch, 120000);
        QVERIFY2(ended.code != 0 && ended.code != -2, qPrintable(ended.err.right(2500)));
        int64_t stopped_at = 0;
        {
            RunStore reader(store.path().toStdString());
            const auto run = reader.findRun(run_id);
            QVERIFY2(run->status == "interrupted", qPrintable(QString::fromStdString(run->status + ": " + run->error)));
            QVERIFY(!reader.checkpoints(run_id).empty());
            stopped_at = run->steps;
        }
        QVERIFY(stopped_at < 24);
        resumeBitwise(store.path(), reference_id, run_id, 24);
    }

    // SIGTERM to one rank's process alone (replicated state, where a stop is not agreed in a
    // collective): it stops at its boundary, and the other process learns of the stop through the
    // store's abort key and stops too, not as a failure; the checkpoint resumes bitwise.
    void aStopInOneProcessStopsTheOthers() {
        QTemporaryDir store;
        const QStringList settings{"train.steps=24", "train.checkpoint_every=100", "train.seq_len=256"};
        Result threads = runCli(runArguments(store.path(), settings + QStringList{"runtime.world_size=2"}), 240000);
        QVERIFY2(threads.code == 0, qPrintable(threads.err));
        const std::string reference_id = runIdOf(threads);
        const int port = freeTcpPort();
        QProcess launch;
        startTorchrun(launch, 2, port, runArguments(store.path(), settings));
        const std::string run_id = waitForRun(store.path(), reference_id, 4);
        QVERIFY2(!run_id.empty(), "the run did not reach its step in time");
        ::kill(rankProcess(port, 1), SIGTERM);
        Result ended = finish(launch, 120000);
        // (torchrun reports rank 1's exit code 130 as a failure and sends rank 0 SIGTERM, which
        // may come before rank 0 has recorded its end: then the run reads "interrupted".)
        QVERIFY2(!ended.err.contains("run failed") && !ended.err.contains("another rank failed"),
                 qPrintable(ended.err.right(2500)));
        {
            RunStore reader(store.path().toStdString());
            const auto run = reader.findRun(run_id);
            QVERIFY2(run->status == "stopped" || run->status == "interrupted",
                     qPrintable(QString::fromStdString(run->status + ": " + run->error)));
            QVERIFY(run->steps < 24 && !reader.checkpoints(run_id).empty());
        }
        resumeBitwise(store.path(), reference_id, run_id, 24);
    }

    // Out of memory in both processes at the same step (runtime.memory_limit_mb between what
    // m 4 and m 8 need): every rank backs off alike to m 4 x K 4 and the run goes on, to the
    // losses of a run started there on threads (1e-5: m 8's dropped window leaves no trace, the
    // sums of m 4 run in the same order).
    void outOfMemoryBacksOffAlikeInEveryProcess() {
        QTemporaryDir store;
        auto split = [](int m, int K, int steps) {
            return QStringList{QString("train.micro_batch_size=%1").arg(m), QString("train.gradient_accumulation_steps=%1").arg(K),
                               QString("train.steps=%1").arg(steps), "runtime.zero_stage=2"};
        };
        Result first8 = runCli(runArguments(store.path(), split(8, 2, 1) + QStringList{"runtime.world_size=2"}));
        Result small = runCli(runArguments(store.path(), split(4, 4, 3) + QStringList{"runtime.world_size=2"}));
        QVERIFY(first8.code == 0 && small.code == 0);
        const qint64 limit_mib = qint64(lastJsonLine(small.out)["peak_memory_bytes"].toDouble()) / (1 << 20) + 1;
        QVERIFY(limit_mib * (1 << 20) < qint64(lastJsonLine(first8.out)["peak_memory_bytes"].toDouble()));
        Result backed = torchrun(2, runArguments(store.path(), split(8, 2, 3) + QStringList{QString("runtime.memory_limit_mb=%1").arg(limit_mib)}));
        QVERIFY2(backed.code == 0, qPrintable((backed.out + backed.err).right(2500)));
        QCOMPARE(lastJsonLine(backed.out)["micro_batch_size"].toInt(), 4);
        QCOMPARE(lastJsonLine(backed.out)["gradient_accumulation_steps"].toInt(), 4);
        RunStore reader(store.path().toStdString());
        int backoffs = 0;
        for (const auto& e : reader.events(runIdOf(backed))) backoffs += e.kind == "oom_backoff" ? 1 : 0;
        QCOMPARE(backoffs, 1);
        const auto expected = reader.metrics(runIdOf(small), metric::kLoss), got = reader.metrics(runIdOf(backed), metric::kLoss);
        QCOMPARE(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i)
            QVERIFY2(std::abs(got[i].value - expected[i].value) <= 1e-5 * std::abs(expected[i].value),
                     qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(got[i].value).arg(expected[i].value)));
    }

    // A run of two processes resumed as four (the checkpoint is whole: rank 0 writes it), with
    // the global batch kept (K 2 -> 1); and as three, which cannot keep it, refused naming the field.
    void aResumeOnAnotherProcessCount() {
        QTemporaryDir store;
        Result first = torchrun(2, runArguments(store.path(), {"train.steps=2", "train.micro_batch_size=4",
                                                               "train.gradient_accumulation_steps=2"}));
        QVERIFY2(first.code == 0, qPrintable(first.err));
        const QString run_id = QString::fromStdString(runIdOf(first));
        Result three = torchrun(3, {"resume", run_id, "--store", store.path(), "--set", "runtime.world_size=3", "--set",
                                    "train.steps=4"});
        QCOMPARE(three.code, 1);  // torchrun's own code for a failed worker (each exited 2)
        QVERIFY2(three.err.contains("exitcode: 2"), qPrintable(three.err.right(2500)));
        QVERIFY2(three.err.contains("error: train.global_batch"), qPrintable(three.err.right(2500)));
        Result four = torchrun(4, {"resume", run_id, "--store", store.path(), "--set", "runtime.world_size=4", "--set",
                                   "train.gradient_accumulation_steps=1", "--set", "train.steps=4"});
        QVERIFY2(four.code == 0, qPrintable(four.out + four.err));
        QCOMPARE(lastJsonLine(four.out)["world_size"].toInt(), 4);
        QCOMPARE(lastJsonLine(four.out)["steps"].toInt(), 4);
    }
};

QTEST_GUILESS_MAIN(TestCliProcesses)
#include "test_cli_processes.moc"
