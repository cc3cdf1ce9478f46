// The window's order (runtime.window_schedule): unit, every micro-batch through one unit before
// the next, against micro_batch, each micro-batch through the whole model; the numbers of every
// step and the weights after them bit for bit at the conformance splits, ZeRO 0-3, expert
// parallelism, offload (host and offload_dir, the host step), fp32/bf16/fp8, the noise scale and
// the incomplete last window; the shards read from offload_dir per window; the refusals and
// "auto", and the multi-token-prediction modules in the head's unit (docs/design/offload.md, "The
// window as the schedule").
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include "conformance_setup.h"
#include "cpu_paths_report.h"
#include "offload_runs.h"
#include "rank_threads.h"
#include "train/window_order.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

using namespace trainbench;

namespace {

// What a run's steps reported (every rank's the same: global) and rank 0's weights after them.
struct Trace {
    std::vector<WindowResult> windows;
    std::vector<torch::Tensor> weights;
};

Trace traceOf(RunConfig c, const char* schedule, int64_t steps, OffloadPath path = OffloadPath::Device) {
    c.runtime.window_schedule = schedule;
    c.runtime.activation_checkpointing = "full";
    Trace trace;
    onRankTrainers(c, offloadPathOptions(path), [&](int r, RankTrainer& trainer) {
        std::vector<WindowResult> seen;
        trainSteps(trainer, steps, [&](const WindowResult& w) { seen.push_back(w); });
        auto weights = trainer.wholeParameters();
        if (r == 0) {
            trace.windows = std::move(seen);
            trace.weights = std::move(weights);
        }
    });
    return trace;
}

bool sameNoise(const std::optional<NoiseScaleParts>& a, const std::optional<NoiseScaleParts>& b) {
    return a.has_value() == b.has_value() && (!a || (a->grad_sq == b->grad_sq && a->trace == b->trace));
}

// unit against micro_batch on `c`: every step's loss, count, balance loss, norm, loads, noise
// scale parts and file traffic, and the weights at the end, equal bit for bit.
void expectTheSameNumbers(const RunConfig& c, const QString& what, OffloadPath path = OffloadPath::Device,
                          int64_t steps = 3) {
    const Trace reference = traceOf(c, "micro_batch", steps, path);
    const Trace unit = traceOf(c, "unit", steps, path);
    QCOMPARE(unit.windows.size(), reference.windows.size());
    for (size_t s = 0; s < reference.windows.size(); ++s) {
        const WindowResult &a = unit.windows[s], &b = reference.windows[s];
        const QString at = what + QString(", step %1").arg(s + 1);
        QVERIFY2(a.loss_sum == b.loss_sum, qPrintable(at + QString(": loss sum %1 vs %2").arg(a.loss_sum, 0, 'g', 17).arg(b.loss_sum, 0, 'g', 17)));
        QVERIFY2(a.tokens == b.tokens, qPrintable(at + ": tokens"));
        QVERIFY2(a.aux_loss_sum == b.aux_loss_sum, qPrintable(at + ": balance loss"));
        QVERIFY2(a.mtp_loss_sums == b.mtp_loss_sums && a.mtp_tokens == b.mtp_tokens, qPrintable(at + ": depth losses"));
        QVERIFY2(a.grad_norm == b.grad_norm, qPrintable(at + QString(": grad norm %1 vs %2").arg(a.grad_norm, 0, 'g', 17).arg(b.grad_norm, 0, 'g', 17)));
        QVERIFY2(a.loads.size() == b.loads.size(), qPrintable(at + ": loads"));
        for (size_t l = 0; l < a.loads.size(); ++l) QVERIFY2(torch::equal(a.loads[l], b.loads[l]), qPrintable(at + ": loads"));
        QVERIFY2(sameNoise(a.noise, b.noise), qPrintable(at + ": noise scale"));
        QVERIFY2(a.noise_groups.size() == b.noise_groups.size(), qPrintable(at + ": noise groups"));
        for (size_t g = 0; g < a.noise_groups.size(); ++g)
            QVERIFY2(sameNoise(a.noise_groups[g], b.noise_groups[g]), qPrintable(at + QString(": noise group %1").arg(g)));
    }
    QCOMPARE(unit.weights.size(), reference.weights.size());
    for (size_t i = 0; i < reference.weights.size(); ++i)
        QVERIFY2(torch::equal(unit.weights[i], reference.weights[i]), qPrintable(what + QString(": parameter %1 differs").arg(i)));
}

QString describe(const SplitCase& k) {
    return QString("(%1,%2,%3) stage %4 EP %5").arg(k.m).arg(k.K).arg(k.W).arg(k.stage).arg(k.EP);
}

// unit against micro_batch with something of the unit order's in offload_dir's file (`tier`:
// what, for the messages), on the CPU ranks' `path` and the host step's `host_path`: the
// offload conformance splits, optimizer and all (all at stage 3), with the noise scale.
void expectTheSameNumbersWithAFileTier(const QTemporaryDir& dir, const QString& tier, OffloadPath path, OffloadPath host_path) {
    for (const SplitCase& k : std::vector<SplitCase>{{2, 4, 1, 3, 1}, {1, 4, 2, 3, 1}, {2, 2, 2, 2, 1}, {1, 4, 2, 3, 2}})
        for (const char* choice : {"optimizer", "all"})
            for (OffloadPath p : {path, host_path}) {
                if (std::string(choice) == "all" && k.stage < 3) continue;
                RunConfig c = offloaded(split(k.m, k.K, k.W, k.stage, k.EP), dir.path().toStdString(), choice);
                c.train.noise_scale = true;
                const QString what = describe(k) + " offload " + choice + ", " + tier + (p == path ? "" : ", host step");
                expectTheSameNumbers(c, what, p);
            }
}

}  // namespace

class TestWindowOrder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The conformance splits at every ZeRO stage, with the noise scale on.
    void unitOrderGivesTheNumbersOfTheMicroBatchOrder() {
        for (const SplitCase& k : std::vector<SplitCase>{{8, 1, 1, 0, 1}, {2, 4, 1, 0, 1}, {2, 2, 2, 0, 1}, {1, 4, 2, 0, 1}})
            for (int64_t stage = 0; stage <= 3; ++stage) {
                RunConfig c = split(k.m, k.K, k.W, stage, k.EP);
                c.train.noise_scale = true;
                expectTheSameNumbers(c, describe({k.m, k.K, k.W, stage, k.EP}));
            }
    }

    // Multi-token prediction: two modules in the head's unit, reading the embeddings (unit 1's
    // kept input) and the head; their losses, the balance loss of their MoE blocks and every
    // weight as under micro_batch, at stages 0-3 and under expert parallelism.
    void unitOrderWithMultiTokenPrediction() {
        for (const SplitCase& k : std::vector<SplitCase>{{2, 4, 1, 0, 1}, {1, 4, 2, 0, 1}, {2, 2, 2, 0, 2}})
            for (int64_t stage = 0; stage <= 3; ++stage) {
                RunConfig c = split(k.m, k.K, k.W, stage, k.EP);
                c.model.n_mtp_depth = 2;
                c.model.seq_aux_loss_alpha = 0.01;
                c.train.noise_scale = true;
                expectTheSameNumbers(c, describe({k.m, k.K, k.W, stage, k.EP}) + " D 2");
            }
        for (const char* dtype : {"bf16", "fp8"}) {
            RunConfig c = split(1, 4, 2, 3, 1);
            c.model.n_mtp_depth = 1;
            c.runtime.dtype = dtype;
            expectTheSameNumbers(c, QString("(1,4,2) stage 3 D 1 ") + dtype);
        }
    }

    // Expert parallelism (the routed experts' tokens by all-to-all, their gradients over replicas).
    void unitOrderUnderExpertParallelism() {
        for (const SplitCase& k : std::vector<SplitCase>{{2, 2, 2, 0, 2}, {1, 4, 2, 0, 2}})
            for (int64_t stage = 0; stage <= 3; ++stage) {
                RunConfig c = split(k.m, k.K, k.W, stage, k.EP);
                c.train.noise_scale = true;
                expectTheSameNumbers(c, describe({k.m, k.K, k.W, stage, k.EP}));
            }
    }

    // Offload optimizer and all, in host memory and in offload_dir's files, on the CPU ranks'
    // path and the GPU ranks' host step (its gradient sums on the device or on the host).
    void unitOrderUnderOffload() {
        QTemporaryDir dir;
        for (const SplitCase& k : std::vector<SplitCase>{{2, 4, 1, 3, 1}, {1, 4, 2, 3, 1}, {2, 2, 2, 2, 1}, {1, 4, 2, 3, 2}})
            for (const char* choice : {"optimizer", "all"})
                for (const std::string& where : {std::string(), dir.path().toStdString()})
                    for (OffloadPath path : {OffloadPath::Device, OffloadPath::HostStep, OffloadPath::HostStepSumsOnHost}) {
                        if (std::string(choice) == "all" && k.stage < 3) continue;
                        if (path == OffloadPath::HostStepSumsOnHost && k.stage < 2) continue;
                        const QString what = describe(k) + " offload " + choice + (where.empty() ? " host" : " offload_dir") +
                                             (path == OffloadPath::Device ? "" : path == OffloadPath::HostStep ? ", host step" : ", sums on the host");
                        expectTheSameNumbers(offloaded(split(k.m, k.K, k.W, k.stage, k.EP), where, choice), what, path);
                    }
    }

    // The gradient sums in offload_dir's file (the unit order's gradient tier): each unit's made
    // on the device over its K micro-batches, its norm's squares taken, written once, read back by
    // the step; against micro_batch with the sums on the device (which cannot put them in a
    // file), on the CPU ranks' path and the host step, optimizer and all, with expert parallelism.
    void unitOrderWithTheGradientSumsInAFile() {
        QTemporaryDir dir;
        expectTheSameNumbersWithAFileTier(dir, "sums in offload_dir", OffloadPath::SumsInFile, OffloadPath::HostStepSumsInFile);
        QTemporaryDir again;
        RunConfig c = offloaded(split(1, 4, 2, 3), again.path().toStdString(), "all");
        c.runtime.dtype = "bf16";
        expectTheSameNumbers(c, "(1,4,2) stage 3 offload all bf16, sums in offload_dir, host step",
                             OffloadPath::HostStepSumsInFile);
    }

    // The file's traffic: every rank writes each bucket's slice sum once a window and the step
    // reads it once, each bucket's region whole 4 KiB blocks of its fp32 slice (ceil(n_u / W)
    // elements of unit u): by hand from the model's units, the difference the sums make to the
    // second window's offload_dir traffic.
    void unitOrderWritesTheGradientSumsOnceAWindow() {
        const int64_t W = 2, K = 4;
        Transformer model(split(1, K, W, 2).model);
        int64_t regions = 0;
        for (const auto& unit : model->units()) {
            int64_t n = 0;
            for (const auto& p : unit) n += p.numel();
            regions += ((n + W - 1) / W * 4 + 4095) / 4096 * 4096;
        }
        QTemporaryDir dir;
        auto traffic = [&](OffloadPath path) {
            RunConfig c = offloaded(split(1, K, W, 2), dir.path().toStdString(), "optimizer");
            const Trace trace = traceOf(c, "unit", 2, path);
            return std::pair{trace.windows.back().offload_read_bytes, trace.windows.back().offload_written_bytes};
        };
        const auto [read, written] = traffic(OffloadPath::SumsInFile);
        const auto [read_without, written_without] = traffic(OffloadPath::Device);
        qInfo("offload_dir per window with the sums there: read %lld, written %lld; without: %lld, %lld",
              (long long)read, (long long)written, (long long)read_without, (long long)written_without);
        QCOMPARE(written - written_without, W * regions);
        QCOMPARE(read - read_without, W * regions);
    }

    // The boundary activations in offload_dir's file (the unit order's third tier): written
    // once after their forward, read back for each use, the same bits; on the CPU ranks' path
    // and the host step, optimizer and all, with expert parallelism, the noise scale, the
    // multi-token-prediction modules (which read unit 1's input once more) and bf16.
    void unitOrderWithTheBoundariesInAFile() {
        QTemporaryDir dir;
        expectTheSameNumbersWithAFileTier(dir, "boundaries in offload_dir", OffloadPath::BoundariesInFile,
                                          OffloadPath::HostStepBoundariesInFile);
        RunConfig mtp = offloaded(split(1, 4, 2, 3), dir.path().toStdString(), "all");
        mtp.model.n_mtp_depth = 1;
        expectTheSameNumbers(mtp, "(1,4,2) stage 3 D 1, boundaries in offload_dir", OffloadPath::BoundariesInFile);
        RunConfig bf16 = offloaded(split(1, 4, 2, 3), dir.path().toStdString(), "all");
        bf16.runtime.dtype = "bf16";
        expectTheSameNumbers(bf16, "(1,4,2) stage 3 bf16, boundaries in offload_dir, host step",
                             OffloadPath::HostStepBoundariesInFile);
    }

    // The file's traffic by the I/O accounting (io/read_bytes, io/write_bytes), against the same
    // run with the boundaries on the device, each [m, T, d] fp32, by hand from the config: every
    // rank writes each of its K micro-batches' L + 1 unit inputs once and reads 2L + 1 back (each
    // block's input for its forward and its backward, the head's once), writes the gradient
    // handed down L + 1 times (the head's backward and each block's) and reads it L + 1 times
    // (each block's backward and the embedding's); with the modules unit 1's input is read once
    // more and their gradient of the embeddings written and read once.
    void unitOrderWritesEachBoundaryOnceAndReadsItAtEachUse() {
        const int64_t W = 2, K = 4;
        QTemporaryDir dir;
        for (int64_t depth : {0, 1}) {
            RunConfig c = offloaded(split(1, K, W, 3), dir.path().toStdString(), "optimizer");
            c.model.n_mtp_depth = depth;
            const int64_t L = c.model.n_layers, b = 1 * c.train.seq_len * c.model.dim * 4;
            const WindowResult in_file = traceOf(c, "unit", 2, OffloadPath::BoundariesInFile).windows.back();
            const WindowResult on_device = traceOf(c, "unit", 2, OffloadPath::Device).windows.back();
            const int64_t written = in_file.offload_written_bytes - on_device.offload_written_bytes;
            const int64_t read = in_file.offload_read_bytes - on_device.offload_read_bytes;
            qInfo("boundaries in offload_dir, D %lld: written %lld, read %lld bytes a window", (long long)depth,
                  (long long)written, (long long)read);
            QCOMPARE(written, W * K * ((L + 1) + (L + 1) + depth) * b);
            QCOMPARE(read, W * K * ((2 * L + 1) + (L + 1) + 2 * depth) * b);
        }
    }

    // bf16 autocast and fp8 products, with their own weights' dtypes (bf16 device weights under
    // the host step).
    void unitOrderUnderReducedPrecision() {
        for (const char* dtype : {"bf16", "fp8"})
            for (const SplitCase& k : std::vector<SplitCase>{{2, 4, 1, 0, 1}, {1, 4, 2, 3, 1}}) {
                RunConfig c = split(k.m, k.K, k.W, k.stage, k.EP);
                c.runtime.dtype = dtype;
                expectTheSameNumbers(c, describe(k) + " " + dtype);
            }
        QTemporaryDir dir;
        RunConfig c = offloaded(split(1, 4, 2, 3), dir.path().toStdString(), "all");
        c.runtime.dtype = "bf16";
        expectTheSameNumbers(c, "(1,4,2) stage 3 offload all bf16, host step", OffloadPath::HostStep);
    }

    // train.samples leaves a last window of fewer micro-batches (scaled by its own tokens), and
    // padded rows of different target counts (the ragged corpus).
    void unitOrderOnTheIncompleteLastWindowAndRaggedRows() {
        QTemporaryDir dir;
        RunConfig c = withSplit(raggedTextConfig(writeRaggedCorpus(dir)), 1, 4, 2);
        c.train.weight_decay = 0.1;
        c.train.eval_every = 0;
        c.runtime.zero_stage = 3;
        c.train.steps = 0;
        c.train.samples = 8 * 2 + 2;  // two full windows of 8 sequences, then one micro-batch per rank
        c.train.noise_scale = true;
        expectTheSameNumbers(c, "(1,4,2) stage 3, incomplete last window", OffloadPath::Device, 3);
    }

    // Offload all in offload_dir: the bytes the shards' file read in a window (the second step's,
    // which also holds the first step's optimizer traffic, the same under both orders). Under
    // micro_batch each micro-batch reads every unit's shard for its forward and again for its
    // backward (not the embedding's, whose backward reads no weight): K passes. Under unit, one
    // pass whatever K.
    void unitOrderReadsEachShardTwiceAWindow() {
        QTemporaryDir dir;
        auto readBytes = [&](const char* schedule, int64_t K) {
            RunConfig c = offloaded(split(1, K, 2, 3), dir.path().toStdString(), "all");
            const Trace trace = traceOf(c, schedule, 2);
            return trace.windows.back().offload_read_bytes;
        };
        const int64_t unit1 = readBytes("unit", 1), unit4 = readBytes("unit", 4);
        const int64_t micro1 = readBytes("micro_batch", 1), micro2 = readBytes("micro_batch", 2),
                      micro4 = readBytes("micro_batch", 4);
        const int64_t pass = micro2 - micro1;  // one micro-batch's shard reads, over both ranks
        qInfo("offload_dir reads per window: micro_batch K 1/2/4 %lld/%lld/%lld, unit K 1/4 %lld/%lld bytes",
              (long long)micro1, (long long)micro2, (long long)micro4, (long long)unit1, (long long)unit4);
        QVERIFY(pass > 0);
        QCOMPARE(micro4 - micro1, 3 * pass);
        QCOMPARE(unit1, micro1);
        QCOMPARE(unit4, unit1);
    }

    // The host link's bytes by the I/O accounting (io/to_device_bytes, io/to_host_bytes) on the
    // host step's path (a GPU's; here CPU ranks taking it), per window, by hand: each rank's
    // fp32 slice of each unit is ceil(n_u / W) elements. The window's finished sums come down
    // once (4 bytes a slice element); under offload all every gather's shard goes up (stage 3's
    // gathered bytes: K passes under micro_batch, one under unit), under optimizer the stepped
    // slice goes up once after the step (the second window's count holds the first step's). The
    // planner's prediction for the same run on GPUs agrees within the units' padding. With the
    // sums kept in host memory the micro-batch order brings every micro-batch's fp32 slice down
    // (K times the slices), the unit order each unit's finished sum once (in its dtype: half the
    // bytes under runtime.gradient_sum_dtype bf16).
    void theHostLinkCarriesWhatThePlacementMoves() {
        const int64_t W = 2, K = 4;
        const RunConfig base = split(1, K, W, 3);
        Transformer model(base.model);
        int64_t slices = 0;
        for (const auto& unit : model->units()) {
            int64_t n = 0;
            for (const auto& p : unit) n += p.numel();
            slices += W * ((n + W - 1) / W) * 4;
        }
        for (const char* choice : {"all", "optimizer"})
            for (const char* schedule : {"micro_batch", "unit"}) {
                const RunConfig c = offloaded(base, "", choice);
                const Trace trace = traceOf(c, schedule, 2, OffloadPath::HostStep);
                const WindowResult& w = trace.windows.back();
                const bool all = std::string(choice) == "all";
                const QString what = QString("%1 %2").arg(choice, schedule);
                QVERIFY2(w.to_host_bytes == slices, qPrintable(what + QString(": down %1, by hand %2").arg(w.to_host_bytes).arg(slices)));
                const int64_t up = all ? w.shard_gathered_bytes : slices;
                QVERIFY2(w.to_device_bytes == up, qPrintable(what + QString(": up %1, by hand %2").arg(w.to_device_bytes).arg(up)));
                // The planner's prediction of the same on K x m x W = 4 x 1 x 2 H100s (fp32).
                RunConfig planned = c;
                planned.runtime.activation_checkpointing = "full";
                planned.runtime.window_schedule = schedule;
                planned.target.kind = "h100-80";
                const TargetMachine target = resolveTarget(planned);
                const RunConfig on = configOnTarget(planned, target);
                const StepTimePlan t = predictStepTime(on, planOnTarget(planned, target), target);
                QVERIFY2(std::fabs(t.to_host_bytes - double(w.to_host_bytes)) <= 0.01 * double(w.to_host_bytes),
                         qPrintable(what + QString(": predicted down %1").arg(t.to_host_bytes)));
                QVERIFY2(std::fabs(t.to_device_bytes - double(w.to_device_bytes)) <= 0.01 * double(w.to_device_bytes),
                         qPrintable(what + QString(": predicted up %1").arg(t.to_device_bytes)));
            }
        for (const char* dtype : {"fp32", "bf16"})
            for (const char* schedule : {"micro_batch", "unit"}) {
                RunConfig c = offloaded(base, "", "optimizer");
                c.runtime.gradient_sum_dtype = dtype;
                const Trace trace = traceOf(c, schedule, 2, OffloadPath::HostStepSumsOnHost);
                const bool unit = std::string(schedule) == "unit", bf16 = std::string(dtype) == "bf16";
                const int64_t down = !unit ? K * slices : bf16 ? slices / 2 : slices;
                const QString what = QString("sums on the host, %1 sums, %2").arg(dtype, schedule);
                const WindowResult& w = trace.windows.back();
                QVERIFY2(w.to_host_bytes == down, qPrintable(what + QString(": down %1, by hand %2").arg(w.to_host_bytes).arg(down)));
                QVERIFY2(w.to_device_bytes == slices, qPrintable(what + QString(": up %1").arg(w.to_device_bytes)));
            }
    }

    // Stage 3's gathers by the I/O accounting (io/gathered_bytes): every rank takes its fp32
    // slice of each unit, ceil(n_u / W) elements, for the unit's forward, and again for its
    // backward except the embedding's: per micro-batch sum_u + sum_{u > 0}, over the W ranks, K
    // times a window. The unit order takes each once for the window's forwards and once for its
    // backwards, the head once for both (its forward and backward run together).
    void unitOrderGathersEachUnitTwiceAWindow() {
        const int64_t W = 2, K = 4;
        const RunConfig c = split(1, K, W, 3);
        Transformer model(c.model);
        const auto units = model->units();
        int64_t pass = 0, head = 0;
        for (size_t u = 0; u < units.size(); ++u) {
            int64_t n = 0;
            for (const auto& p : units[u]) n += p.numel();
            pass += (u == 0 ? 1 : 2) * W * ((n + W - 1) / W) * 4;
            if (u + 1 == units.size()) head = W * ((n + W - 1) / W) * 4;
        }
        const Trace micro = traceOf(c, "micro_batch", 2), unit = traceOf(c, "unit", 2);
        for (size_t s = 0; s < 2; ++s) {
            QCOMPARE(micro.windows[s].shard_gathered_bytes, K * pass);
            QCOMPARE(unit.windows[s].shard_gathered_bytes, pass - head);
        }
        // The planner's prediction of the same, from the parameter count (each rank's slice of
        // the whole, not of each unit: within the units' padding).
        for (const char* schedule : {"micro_batch", "unit"}) {
            RunConfig planned = c;
            planned.runtime.activation_checkpointing = "full";
            planned.runtime.window_schedule = schedule;
            const double predicted = double(planMemory(planned).shard_gathered_bytes_per_step);
            const double measured = double(std::string(schedule) == "unit" ? pass - head : K * pass);
            QVERIFY2(std::fabs(predicted - measured) <= 0.01 * measured,
                     qPrintable(QString("%1: predicted %2, measured %3").arg(schedule).arg(predicted).arg(measured)));
        }
    }
};

QTEST_GUILESS_MAIN(TestWindowOrder)
#include "test_window_order.moc"
