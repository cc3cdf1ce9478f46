// runtime.optimizer_dtype suite: AdamW's moments stored in bf16 (DeepSeek-V3), the master weights
// and gradients fp32. The kernel against AdamW written out here in fp64 with its own bf16
// rounding; every layout and offload home bitwise equal to stage 0; fp32 against bf16 moments on
// the tiny config; checkpoints resumed across the two; the moments' bytes by hand
// (docs/design/offload.md, "bf16 moments").
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <cmath>
#include <filesystem>
#include <map>

#include "cpu_paths_report.h"
#include "conformance_setup.h"
#include "kernels/vector_math.h"
#include "parallel/fused_adamw.h"
#include "parallel/gradient_layout.h"
#include "rank_threads.h"
#include "train/checkpoint.h"
#include "trainbench/checkpoints.h"
#include "trainbench/param_count.h"
#include "trainbench/training_session.h"

using namespace trainbench;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------------
// The reference: bf16 rounding and AdamW in fp64, written from the definitions.

// x to the nearest bf16 value, ties to even: bf16 keeps 8 significant bits, so x = f 2^e with
// 0.5 <= |f| < 1 has its last kept place at 2^(e - 8); nearbyint rounds ties to even (the
// default rounding mode). Normal values only (the moments here are).
double bf16Of(double x) {
    if (x == 0.0 || !std::isfinite(x)) return x;
    int e = 0;
    std::frexp(x, &e);
    const double place = std::ldexp(1.0, e - 8);
    return std::nearbyint(x / place) * place;
}

// Whether x lies so close to a midpoint between two bf16 values that an fp32 computation of it
// (relative error about 2^-23 after a few operations) may round the other way.
bool nearBf16Midpoint(double x) {
    if (x == 0.0) return false;
    int e = 0;
    std::frexp(x, &e);
    const double place = std::ldexp(1.0, e - 8);
    const double from_midpoint = std::fabs(std::fabs(x / place) - std::floor(std::fabs(x / place)) - 0.5);
    return from_midpoint * place <= std::fabs(x) * 1e-6;
}

struct Hyper {
    double lr, beta1, beta2, weight_decay, eps;
};

// AdamW as the engine defines it (decoupled decay, bias-corrected moments), one step of fp64
// state; `round` keeps the new moments as bf16 values after the update has used them unrounded.
void referenceStep(std::vector<double>& p, const std::vector<double>& grad, std::vector<double>& m,
                   std::vector<double>& v, double t, const Hyper& h, double divisor, bool round) {
    const double step_size = h.lr / (1 - std::pow(h.beta1, t)), bias2_sqrt = std::sqrt(1 - std::pow(h.beta2, t));
    for (size_t i = 0; i < p.size(); ++i) {
        const double g = grad[i] / divisor;
        m[i] = h.beta1 * m[i] + (1 - h.beta1) * g;
        v[i] = h.beta2 * v[i] + (1 - h.beta2) * g * g;
        p[i] = (1 - h.lr * h.weight_decay) * p[i] - step_size * m[i] / (std::sqrt(v[i]) / bias2_sqrt + h.eps);
        if (round) m[i] = bf16Of(m[i]), v[i] = bf16Of(v[i]);
    }
}

std::vector<double> valuesOf(const torch::Tensor& x) {
    const torch::Tensor d = x.to(torch::kFloat64).contiguous();
    return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// ---------------------------------------------------------------------------------------------
// Runs.

RunConfig split(int64_t m, int64_t K, int64_t W, int64_t stage, int64_t EP, const char* moments) {
    RunConfig c = withSplit(conformanceConfig(), m, K, W);
    c.train.weight_decay = 0.1;
    c.train.eval_every = 0;
    // No clipping: each layout sums its squared norm in its own grouping (equal to 1e-7, not
    // bitwise), so clipping would make the steps' divisors differ in their last bits.
    c.train.grad_clip = 0.0;
    c.runtime.zero_stage = stage;
    c.runtime.expert_parallel = EP;
    c.runtime.optimizer_dtype = moments;
    return c;
}

struct Trained {
    std::vector<double> losses;                   // rank 0's window loss (sum / N) per step
    std::vector<std::vector<torch::Tensor>> weights;  // every rank's whole parameters at the end
};

// `steps` steps on rank threads with 4 KiB buckets (many buckets, slices that cross parameters).
Trained trainOnRanks(const RunConfig& config, int64_t steps, bool host_mirror = false,
                     std::vector<MemoryAccount*>* accounts = nullptr) {
    Trained out;
    out.weights.resize(config.runtime.world_size);
    RankThreadOptions options;
    options.bucket_bytes = 4096;
    options.host_mirror = host_mirror;
    options.accounts = accounts;
    onRankTrainers(config, options, [&](int r, RankTrainer& trainer) {
        for (int64_t step = 0; step < steps; ++step) {
            WindowResult window;
            if (trainer.accumulateWindow(step, window) != WindowOutcome::Complete) throw std::runtime_error("window");
            if (r == 0) out.losses.push_back(window.loss_sum / double(window.tokens));
            trainer.applyUpdate(step, window);
        }
        out.weights[r] = trainer.wholeParameters();
    });
    return out;
}

std::vector<double> sessionLosses(const RunConfig& config, SessionOptions options = {}, RunSummary* summary = nullptr) {
    TrainingSession session(config, options);
    auto inbox = session.bus().subscribe();
    session.start();
    if (!session.wait(std::chrono::minutes(5))) qFatal("run did not finish");
    if (session.summary().status != RunStatus::Completed) qFatal("run failed: %s", session.summary().error.c_str());
    if (summary) *summary = session.summary();
    std::vector<double> out;
    for (const auto& p : inbox->drain().points)
        if (p.key == "train/loss") out.push_back(p.value);
    return out;
}

// The whole optimizer state a layout of `config` (W 1) holds right after taking `saved`.
NamedTensors stateAfterLoading(const RunConfig& config, const NamedTensors& saved) {
    RankGroups groups(1, 1);
    Transformer model(config.model);
    LayoutSetup setup;
    setup.config = &config;
    setup.collectives = groups.world[0].get();
    setup.placement = placementFor(config, PlacementQuery{});
    auto layout = makeGradientLayout(setup, model, &saved);
    return layout->gatherCheckpoint().optimizer;
}

bool isMoment(const std::string& name) { return name.find(".exp_avg") != std::string::npos; }

}  // namespace

class TestOptimizerDtype : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Five steps of the kernel (fusedAdamWUpdate on bf16 moments) over tensors of odd sizes (the
    // vector loops' tails), with and without weight decay, the gradients divided on some steps,
    // against AdamW in fp64 with the moments rounded to bf16 after each step by the rounding
    // above. The moments are the reference's bit for bit (but where the fp64 value sits on a
    // rounding midpoint to within fp32's error: counted, none expected); the weights agree to
    // fp32's rounding (1e-6 of their size after five steps; measured 3e-7). fp64 weights (ATen's kernel on
    // widened moments: the GPU's path) agree to 1e-12. The moments left unrounded would put the
    // weights far outside that bound: the rounding is real. Every vector variant: the same bits.
    void theKernelFollowsAdamWWithBf16MomentsInFp64() {
        const Hyper h{3e-2, 0.9, 0.95, 0.1, 1e-8};
        const std::vector<int64_t> sizes = {1, 37, 1000, 4099};
        const double divisors[] = {1.0, 3.0, 7.0, 1.0, 12.0};
        for (torch::ScalarType dtype : {torch::kFloat32, torch::kFloat64}) {
            torch::manual_seed(11);
            std::vector<torch::Tensor> params, grads_per_step[5], averages, squares;
            for (int64_t n : sizes) {
                params.push_back(torch::randn({n}, torch::kFloat64).to(dtype));
                averages.push_back(torch::zeros({n}, torch::kBFloat16));
                squares.push_back(torch::zeros({n}, torch::kBFloat16));
                for (auto& g : grads_per_step) g.push_back((torch::randn({n}, torch::kFloat64) * 0.1).to(dtype));
            }
            std::vector<std::vector<double>> p, m, v, p_unrounded, m_unrounded, v_unrounded;
            for (const auto& x : params) {
                p.push_back(valuesOf(x));
                m.emplace_back(x.numel(), 0.0);
                v.emplace_back(x.numel(), 0.0);
            }
            p_unrounded = p, m_unrounded = m, v_unrounded = v;
            int near_midpoint = 0;
            for (int t = 1; t <= 5; ++t) {
                // Parameters 0 and 2 decay, 1 and 3 do not (two calls, as the layouts group them).
                for (bool decay : {true, false}) {
                    std::vector<torch::Tensor> w, g, a, s, steps;
                    for (size_t i = 0; i < sizes.size(); ++i) {
                        if ((i % 2 == 0) != decay) continue;
                        w.push_back(params[i]);
                        g.push_back(grads_per_step[t - 1][i].clone());  // the kernel stores it divided
                        a.push_back(averages[i]);
                        s.push_back(squares[i]);
                        steps.push_back(torch::full({}, double(t), torch::kFloat32));
                        Hyper hi = h;
                        hi.weight_decay = decay ? h.weight_decay : 0.0;
                        const auto grad = valuesOf(grads_per_step[t - 1][i]);
                        referenceStep(p[i], grad, m[i], v[i], t, hi, divisors[t - 1], /*round=*/true);
                        referenceStep(p_unrounded[i], grad, m_unrounded[i], v_unrounded[i], t, hi, divisors[t - 1], false);
                    }
                    fusedAdamWUpdate(w, g, a, s, steps, {h.lr, h.beta1, h.beta2, decay ? h.weight_decay : 0.0, h.eps},
                                     divisors[t - 1]);
                }
                // The moments, element by element, after every step.
                for (size_t i = 0; i < sizes.size(); ++i) {
                    const auto got_m = valuesOf(averages[i]), got_v = valuesOf(squares[i]);
                    for (size_t j = 0; j < got_m.size(); ++j)
                        for (auto [got, want] : {std::pair{got_m[j], &m[i][j]}, std::pair{got_v[j], &v[i][j]}}) {
                            if (got == *want) continue;
                            QVERIFY2(nearBf16Midpoint(*want),
                                     qPrintable(QString("%1 step %2 tensor %3 element %4: moment %5, reference %6")
                                                    .arg(c10::toString(dtype)).arg(t).arg(i).arg(j)
                                                    .arg(got, 0, 'g', 10).arg(*want, 0, 'g', 10)));
                            ++near_midpoint;
                            *want = got;  // either rounding is right there: continue from the kernel's
                        }
                }
            }
            QCOMPARE(near_midpoint, 0);
            const double bound = dtype == torch::kFloat32 ? 1e-6 : 1e-12;
            double worst = 0, worst_unrounded = 0;
            for (size_t i = 0; i < sizes.size(); ++i) {
                const auto got = valuesOf(params[i]);
                for (size_t j = 0; j < got.size(); ++j) {
                    worst = std::max(worst, std::fabs(got[j] - p[i][j]) / std::max(1.0, std::fabs(p[i][j])));
                    worst_unrounded = std::max(worst_unrounded, std::fabs(got[j] - p_unrounded[i][j]) /
                                                                    std::max(1.0, std::fabs(p_unrounded[i][j])));
                }
            }
            qInfo("%s: weights within %.3g of the reference, %.3g of the one with unrounded moments", c10::toString(dtype),
                  worst, worst_unrounded);
            QVERIFY2(worst <= bound, qPrintable(QString("%1: weights off by %2").arg(c10::toString(dtype)).arg(worst)));
            QVERIFY2(worst_unrounded > 20 * bound,
                     qPrintable(QString("%1: unrounded moments only %2 away").arg(c10::toString(dtype)).arg(worst_unrounded)));
        }
        // Each instruction set's variant of the CPU kernel: the same bits.
        const auto stepWith = [](kernels::VectorIsa isa) {
            kernels::setVectorIsa(isa);
            torch::manual_seed(5);
            std::vector<torch::Tensor> w{torch::randn({4099})}, g{torch::randn({4099})},
                a{torch::randn({4099}).to(torch::kBFloat16)}, s{torch::rand({4099}).to(torch::kBFloat16)},
                t{torch::full({}, 3.0, torch::kFloat32)};
            fusedAdamWUpdate(w, g, a, s, t, {1e-2, 0.9, 0.95, 0.1, 1e-8}, 3.0);
            kernels::setVectorIsa(std::nullopt);
            return torch::cat({w[0], g[0], a[0].to(torch::kFloat32), s[0].to(torch::kFloat32)});
        };
        const torch::Tensor baseline = stepWith(kernels::VectorIsa::Baseline);
        for (kernels::VectorIsa isa : {kernels::VectorIsa::Avx2, kernels::VectorIsa::Avx512})
            if (kernels::cpuSupports(isa)) QVERIFY(torch::equal(stepWith(isa), baseline));
    }

    // bf16 moments under every layout: the losses and every rank's weights after three steps are
    // stage 0's bit for bit, W 2 and 4. The gradient sums are the same numbers at every stage
    // here (K 1 at stages 2 and 3, whose per-micro-batch reductions otherwise sum in another
    // order; no clipping), and the kernel is elementwise: each element's update is the same
    // arithmetic on the same bits, whatever slice, bucket or home holds it. Offload optimizer and
    // all (host memory, offload_dir's file, the GPU ranks' host step) likewise against the same
    // stage without offload; expert parallelism against its own stage 0 (its experts' forward
    // is another computation than the replicated model's).
    void everyLayoutAndHomeGivesStageZerosBits() {
        QTemporaryDir scratch;
        const std::string dir = scratch.path().toStdString();
        struct Case {
            int64_t m, K, W, stage, EP;
        };
        const Case cases[] = {{2, 2, 2, 1, 1}, {2, 1, 2, 2, 1}, {2, 1, 2, 3, 1}, {2, 1, 4, 1, 1}, {1, 1, 4, 3, 1},
                              {2, 1, 2, 1, 2}, {2, 1, 4, 3, 2}};
        std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, Trained> stage0;  // by (m, K, W, EP)
        for (const Case& k : cases) {
            const RunConfig config = split(k.m, k.K, k.W, k.stage, k.EP, "bf16");
            auto key = std::tuple{k.m, k.K, k.W, k.EP};
            if (!stage0.count(key)) {
                stage0[key] = trainOnRanks(split(k.m, k.K, k.W, 0, k.EP, "bf16"), 3);
                // The setting reaches the layouts: fp32 moments give other weights.
                const Trained fp32 = trainOnRanks(split(k.m, k.K, k.W, 0, k.EP, "fp32"), 3);
                QVERIFY(!torch::equal(fp32.weights[0][0], stage0[key].weights[0][0]));
            }
            const Trained& reference = stage0[key];
            struct Home {
                const char* offload;
                std::string dir;
                bool host_mirror;
            };
            std::vector<Home> homes = {{"none", "", false}};
            if (k.stage >= 1)
                for (const char* what : {"optimizer", "all"}) {
                    if (std::string(what) == "all" && k.stage < 3) continue;
                    homes.push_back({what, "", false});
                    homes.push_back({what, dir, false});
                    homes.push_back({what, "", true});
                }
            for (const Home& home : homes) {
                RunConfig c = config;
                c.runtime.offload = home.offload;
                c.runtime.offload_dir = home.dir;
                const Trained got = trainOnRanks(c, 3, home.host_mirror);
                const QString what = QString("(%1,%2,%3) stage %4 EP %5 offload %6%7%8")
                                         .arg(k.m).arg(k.K).arg(k.W).arg(k.stage).arg(k.EP).arg(home.offload)
                                         .arg(home.dir.empty() ? "" : " offload_dir", home.host_mirror ? " host step" : "");
                QVERIFY2(got.losses == reference.losses, qPrintable(what + ": losses differ"));
                for (size_t r = 0; r < got.weights.size(); ++r)
                    for (size_t i = 0; i < got.weights[r].size(); ++i)
                        QVERIFY2(torch::equal(got.weights[r][i], reference.weights[r][i]),
                                 qPrintable(what + QString(": rank %1 parameter %2 differs").arg(r).arg(i)));
            }
        }
        QVERIFY2(fs::is_empty(dir), "scratch files left behind");
    }

    // fp32 against bf16 moments, ten steps of the tiny config: not the same numbers (the setting
    // changes the state), but close. Each stored moment is within 2^-9 of its fp32 value
    // (relative), so each step's update m / sqrt(v) within about 2^-9 + 2^-10 of fp32's; the
    // weights, and to first order the loss, drift from fp32's run by at most that fraction of
    // how far the run has moved them. The bound: 2^-8 of the loss's fall over the ten steps
    // (measured: see docs/design/offload.md).
    void bf16MomentsStayCloseToFp32() {
        RunConfig c = split(2, 2, 2, 1, 1, "fp32");
        c.train.steps = 10;
        c.train.grad_clip = 1.0;
        const auto fp32 = sessionLosses(c);
        c.runtime.optimizer_dtype = "bf16";
        const auto bf16 = sessionLosses(c);
        QCOMPARE(fp32.size(), size_t(10));
        QCOMPARE(bf16.size(), size_t(10));
        QCOMPARE(bf16[0], fp32[0]);  // the first loss is before any step
        QVERIFY2(bf16 != fp32, "bf16 moments gave fp32's losses");
        const double fall = fp32.front() - fp32.back(), gap = std::fabs(bf16.back() - fp32.back());
        qInfo("loss after 10 steps: fp32 %.9g, bf16 %.9g; relative difference %.3g; fall %.4g, gap / fall %.3g",
              fp32.back(), bf16.back(), gap / fp32.back(), fall, gap / fall);
        QVERIFY(fall > 0);
        QVERIFY2(gap <= fall / 256, qPrintable(QString("gap %1, fall %2").arg(gap).arg(fall)));
    }

    // Checkpoints keep the moments in their storage dtype (a bf16 run's optimizer file holds
    // BF16 tensors), and a run resumes from one written with the other optimizer_dtype: an fp32
    // checkpoint's moments are rounded to bf16 (to nearest even: the rounding above, element by
    // element) and a bf16 one's widened exactly, at stage 0, stage 1 and with the moments in
    // offload_dir's file. Through the session: the first resumed loss is the checkpointed run's
    // own (the weights are its own), and the rest stay within the bound of
    // bf16MomentsStayCloseToFp32 of the run that never stopped.
    void checkpointsResumeAcrossOptimizerDtypes() {
        QTemporaryDir folder, scratch;
        std::map<std::string, std::vector<double>> uninterrupted;
        std::map<std::string, std::string> checkpoint;
        for (const char* moments : {"fp32", "bf16"}) {
            RunConfig c = split(2, 2, 2, 1, 1, moments);
            c.train.checkpoint_every = 2;
            SessionOptions options;
            options.checkpoint_dir = folder.filePath(moments).toStdString();
            uninterrupted[moments] = sessionLosses(c, options);
            QCOMPARE(uninterrupted[moments].size(), size_t(4));
            checkpoint[moments] = checkpointOfStep(options.checkpoint_dir, 2).path;
        }
        const Checkpoint fp32 = readCheckpoint(checkpoint["fp32"]), bf16 = readCheckpoint(checkpoint["bf16"]);
        int moments_seen = 0;
        for (const auto& [name, tensor] : fp32.optimizer)
            if (isMoment(name)) {
                QCOMPARE(tensor.scalar_type(), torch::kFloat32);
                ++moments_seen;
            }
        for (const auto& [name, tensor] : bf16.optimizer)
            if (isMoment(name)) QCOMPARE(tensor.scalar_type(), torch::kBFloat16);
        QVERIFY(moments_seen > 0);

        // Loaded by each layout of the other dtype: the moments converted, element by element.
        RunConfig loaded = split(2, 1, 1, 0, 1, "bf16");
        for (const auto& [stage, dir] : {std::pair<int64_t, std::string>{0, ""}, {1, ""}, {1, scratch.path().toStdString()}}) {
            loaded.runtime.zero_stage = stage;
            loaded.runtime.offload = dir.empty() ? "none" : "optimizer";
            loaded.runtime.offload_dir = dir;
            for (const char* moments : {"bf16", "fp32"}) {
                loaded.runtime.optimizer_dtype = moments;
                const Checkpoint& from = std::string(moments) == "bf16" ? fp32 : bf16;
                std::map<std::string, torch::Tensor> state;
                for (auto& [name, tensor] : stateAfterLoading(loaded, from.optimizer)) state[name] = tensor;
                for (const auto& [name, saved] : from.optimizer) {
                    if (!isMoment(name)) continue;
                    const QString what = QString("stage %1%2 %3 from the other: %4")
                                             .arg(stage).arg(dir.empty() ? "" : " offload_dir").arg(moments).arg(name.c_str());
                    QVERIFY2(state.count(name), qPrintable(what + " missing"));
                    QCOMPARE(state[name].scalar_type(), std::string(moments) == "bf16" ? torch::kBFloat16 : torch::kFloat32);
                    const auto want = valuesOf(saved), got = valuesOf(state[name]);
                    QCOMPARE(got.size(), want.size());
                    for (size_t j = 0; j < got.size(); ++j)
                        QVERIFY2(got[j] == (std::string(moments) == "bf16" ? bf16Of(want[j]) : want[j]),
                                 qPrintable(what + QString(" element %1: %2 from %3").arg(j).arg(got[j], 0, 'g', 10)
                                                       .arg(want[j], 0, 'g', 10)));
                }
            }
        }

        // Resumed through the session, at stage 1 W 2 and at stage 0 W 1.
        for (const auto& [from, to] : {std::pair<std::string, std::string>{"fp32", "bf16"}, {"bf16", "fp32"}})
            for (const auto& [W, stage] : {std::pair<int64_t, int64_t>{2, 1}, {1, 0}}) {
                RunConfig rest = split(2, 4 / W, W, stage, 1, to.c_str());
                SessionOptions resume;
                resume.resume_from = checkpoint[from];
                const auto tail = sessionLosses(rest, resume);
                const auto& before = uninterrupted[from];
                const QString what = QString("%1 checkpoint resumed with %2 at W %3 stage %4")
                                         .arg(from.c_str(), to.c_str()).arg(W).arg(stage);
                QCOMPARE(tail.size(), size_t(2));
                QVERIFY2(std::fabs(tail[0] - before[2]) <= 1e-6 * before[2],
                         qPrintable(what + QString(": step 3 %1 vs %2").arg(tail[0], 0, 'g', 12).arg(before[2], 0, 'g', 12)));
                const double fall = before.front() - before.back();
                qInfo("%s: step 4 loss %.9g, the uninterrupted run's %.9g (gap / fall %.3g)", qPrintable(what), tail[1],
                      before[3], std::fabs(tail[1] - before[3]) / fall);
                QVERIFY2(std::fabs(tail[1] - before[3]) <= fall / 256,
                         qPrintable(what + QString(": step 4 %1 vs %2").arg(tail[1], 0, 'g', 12).arg(before[3], 0, 'g', 12)));
            }
        QVERIFY2(fs::is_empty(scratch.path().toStdString()), "scratch files left behind");
    }

    // The moments' bytes, measured against the hand count (P parameters, W ranks, the tiny model
    // in one bucket, so each rank's slice holds ceil(P / W) elements): stage 0's rank account
    // holds 2 x 2 P bytes less with bf16 moments than with fp32 (8 P); with offload optimizer
    // the host account holds 2 x 4 x slice bytes (fp32) or 2 x 2 x slice (bf16), half; and with
    // offload_dir every step writes each rank's two moments in whole 4 KiB blocks:
    // W x 2 x alignedUp(4 slice) bytes, or W x 2 x alignedUp(2 slice).
    void theMomentsTakeHalfTheBytes() {
        const RunConfig base = split(2, 2, 2, 1, 1, "fp32");
        // AdamW's parameters: all but the MoE layers' gate biases, which the balancing rule moves.
        const int64_t P = countParameters(base.model).total -
                          (base.model.n_layers - base.model.n_dense_layers) * base.model.n_routed_experts;
        const int64_t W = 2, slice = (P + W - 1) / W;
        const auto block = [](int64_t bytes) { return (bytes + 4095) / 4096 * 4096; };

        // Stage 0, W 1: the rank's account after two steps (moments made), everything else alike.
        std::map<std::string, int64_t> held;
        for (const char* moments : {"fp32", "bf16"}) {
            std::vector<MemoryAccount*> accounts;
            RunConfig c = split(2, 2, 1, 0, 1, moments);
            c.train.steps = 2;
            onRankTrainers(c, [&] {
                RankThreadOptions o;
                o.accounts = &accounts;
                return o;
            }(), [&](int, RankTrainer& trainer) {
                for (int64_t step = 0; step < 2; ++step) {
                    WindowResult window;
                    if (trainer.accumulateWindow(step, window) != WindowOutcome::Complete) throw std::runtime_error("window");
                    trainer.applyUpdate(step, window);
                }
                held[moments] = currentMemoryAccount()->current.load();
            });
        }
        qInfo("P %lld; stage 0 account after two steps: fp32 moments %lld B, bf16 %lld B", (long long)P,
              (long long)held["fp32"], (long long)held["bf16"]);
        QCOMPARE(held["fp32"] - held["bf16"], 2 * 2 * P);

        QTemporaryDir scratch;
        std::map<std::string, int64_t> host, written;
        for (const char* moments : {"fp32", "bf16"}) {
            RunConfig c = base;
            c.runtime.optimizer_dtype = moments;
            c.runtime.offload = "optimizer";
            RunSummary summary;
            sessionLosses(c, {}, &summary);
            host[moments] = summary.host_peak_bytes;
            c.runtime.offload_dir = scratch.path().toStdString();
            TrainingSession session(c);
            auto inbox = session.bus().subscribe();
            session.start();
            QVERIFY(session.wait(std::chrono::minutes(5)));
            std::vector<double> writes;
            for (const auto& p : inbox->drain().points)
                if (p.key == "io/write_bytes") writes.push_back(p.value);
            QVERIFY(writes.size() >= 2);
            written[moments] = int64_t(writes[1]);  // step 1's optimizer, reported with step 2
        }
        qInfo("offload optimizer: host account fp32 %lld B, bf16 %lld B; offload_dir writes a step fp32 %lld B, bf16 %lld B",
              (long long)host["fp32"], (long long)host["bf16"], (long long)written["fp32"], (long long)written["bf16"]);
        QCOMPARE(host["fp32"], 2 * 4 * slice);
        QCOMPARE(host["bf16"], 2 * 2 * slice);
        QCOMPARE(written["fp32"], W * 2 * block(4 * slice));
        QCOMPARE(written["bf16"], W * 2 * block(2 * slice));
    }
};

QTEST_GUILESS_MAIN(TestOptimizerDtype)
#include "test_optimizer_dtype.moc"
