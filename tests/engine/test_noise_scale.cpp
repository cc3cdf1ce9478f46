// The gradient noise scale (docs/design/noise_scale.md): the token-weighted estimators on a problem whose
// answer is known in closed form, the fresh gradient norms on a model whose gradients are known
// by hand, and the estimate in training: independent of how a window is split over ranks and
// micro-batches, absent with one micro-batch, kept across a resume.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <cmath>
#include <numeric>
#include <random>

#include "conformance_setup.h"
#include "rank_threads.h"
#include "data/token_source.h"
#include "train/fresh_gradient_norms.h"
#include "train/noise_scale_probe.h"
#include "data/batch_sampler.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/noise_scale.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

// Linear least squares at a fixed point: x ~ N(0, I_D), y = x . w* + e, e ~ N(0, s^2), the
// per-sample gradient of (x . w - y)^2 / 2 is g = x (x . r - e) with r = w - w*. Isserlis'
// theorem gives G = E g = r and E g g^T = |r|^2 I + 2 r r^T + s^2 I, so
// |G|^2 = |r|^2 and tr(Sigma) = (D + 1) |r|^2 + D s^2, exactly.
struct LeastSquares {
    std::vector<double> r{1.0, 0.5, -0.5, 0.25};
    double noise = 1.0;
    std::mt19937_64 rng{12345};
    std::normal_distribution<double> normal{0.0, 1.0};

    double trueGradSq() const {
        double sq = 0;
        for (double v : r) sq += v * v;
        return sq;
    }
    double trueTrace() const { return double(r.size() + 1) * trueGradSq() + double(r.size()) * noise * noise; }

    // The summed gradient of n fresh samples.
    std::vector<double> summedGradient(int n) {
        std::vector<double> s(r.size(), 0.0);
        for (int t = 0; t < n; ++t) {
            std::vector<double> x(r.size());
            double xr = 0;
            for (size_t i = 0; i < r.size(); ++i) x[i] = normal(rng), xr += x[i] * r[i];
            const double residual = xr - noise * normal(rng);
            for (size_t i = 0; i < r.size(); ++i) s[i] += x[i] * residual;
        }
        return s;
    }
};

double squaredNorm(const std::vector<double>& v) {
    double sq = 0;
    for (double x : v) sq += x * x;
    return sq;
}

// The smoothed estimates over `steps` windows of micro-batches of these token counts: ours
// (token-weighted), and an unweighted one that treats every micro-batch's mean gradient as a
// sample of the mean size (what an estimator blind to token counts would do).
struct Estimates {
    double grad_sq, trace, unweighted_trace;
};

Estimates estimate(LeastSquares& problem, const std::vector<int>& counts, int steps) {
    NoiseScaleTracker ours(0.999), unweighted(0.999);
    const double N = std::accumulate(counts.begin(), counts.end(), 0.0);
    const int64_t M = static_cast<int64_t>(counts.size());
    for (int step = 0; step < steps; ++step) {
        std::vector<double> window(problem.r.size(), 0.0);
        NoiseScaleSums sums;
        double mean_sq = 0;
        std::vector<double> mean_of_means(problem.r.size(), 0.0);
        for (int n : counts) {
            const std::vector<double> s = problem.summedGradient(n);
            sums.fresh_sq_per_token += squaredNorm(s) / n;
            for (size_t i = 0; i < s.size(); ++i) window[i] += s[i], mean_of_means[i] += s[i] / n / double(M);
            mean_sq += squaredNorm(s) / (double(n) * n) / double(M);
        }
        sums.window_sq = squaredNorm(window);
        sums.tokens = N;
        sums.micro_batches = M;
        ours.observe(*noiseScaleParts(sums), N);
        // Unweighted: A = mean |s_k / n_k|^2, T = |mean s_k / n_k|^2, b = N / M.
        const double b = N / double(M), T = squaredNorm(mean_of_means);
        unweighted.observe({(double(M) * T - mean_sq) / double(M - 1), b * double(M) * (mean_sq - T) / double(M - 1)}, N);
    }
    return {ours.gradSq(), ours.trace(), unweighted.trace()};
}

double relative(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); }

RunConfig noiseConfig(int64_t m, int64_t K, int64_t W) {
    RunConfig c = withSplit(conformanceConfig(), m, K, W);
    c.train.eval_every = 0;
    return c;
}

// Every rank's window results for `steps` optimizer steps (fp64 when asked).
std::vector<WindowResult> windowsOf(const RunConfig& config, int64_t steps, bool fp64) {
    std::vector<WindowResult> out;
    RankThreadOptions options;
    options.fp64 = fp64;
    onRankTrainers(config, options, [&](int r, RankTrainer& trainer) {
        trainSteps(trainer, steps, [&](const WindowResult& window) {
            if (r == 0) out.push_back(window);
        });
    });
    return out;
}

}  // namespace

class TestNoiseScale : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Equal token counts: both parts within 3 % of the truth after 4,000 windows of eight.
    void theEstimatorsRecoverAKnownNoiseScale() {
        LeastSquares problem;
        const Estimates e = estimate(problem, std::vector<int>(8, 4), 4000);
        QVERIFY2(relative(e.grad_sq, problem.trueGradSq()) < 0.03, qPrintable(QString::number(e.grad_sq)));
        QVERIFY2(relative(e.trace, problem.trueTrace()) < 0.03, qPrintable(QString::number(e.trace)));
    }

    // Very unequal counts (1 to 40 tokens a micro-batch): the token-weighted trace stays within
    // 3 %; the unweighted one is off by far more.
    void tokenWeightingRemovesTheBiasOfUnequalMicroBatches() {
        LeastSquares problem;
        const Estimates e = estimate(problem, {1, 40, 2, 30, 1, 25, 3, 40}, 4000);
        QVERIFY2(relative(e.grad_sq, problem.trueGradSq()) < 0.03, qPrintable(QString::number(e.grad_sq)));
        QVERIFY2(relative(e.trace, problem.trueTrace()) < 0.03, qPrintable(QString::number(e.trace)));
        QVERIFY2(relative(e.unweighted_trace, problem.trueTrace()) > 0.3, qPrintable(QString::number(e.unweighted_trace)));
    }

    // One micro-batch has no small batch: no estimate (not a zero one).
    void oneMicroBatchGivesNoEstimate() {
        QVERIFY(!noiseScaleParts({10.0, 10.0, 4.0, 1}).has_value());
        QVERIFY(noiseScaleParts({10.0, 10.0, 4.0, 2}).has_value());
        // Two micro-batches of 2 tokens, s_1 = (2, 0), s_2 = (0, 2): A = (4/2 + 4/2) / 4 = 1,
        // T = |(2, 2)|^2 / 16 = 0.5, |G|^2 = (2 * 0.5 - 1) / 1 = 0, tr = 4 (1 - 0.5) / 1 = 2.
        const auto parts = noiseScaleParts({4.0, 8.0, 4.0, 2});
        QCOMPARE(parts->grad_sq, 0.0);
        QCOMPARE(parts->trace, 2.0);
    }

    // The smoothing is per token: one step of twice the tokens weighs as two steps.
    void theDecayIsPerToken() {
        NoiseScaleTracker a(0.9), b(0.9);
        a.observe({1.0, 10.0}, 100);
        a.observe({3.0, 30.0}, 200);
        b.observe({1.0, 10.0}, 100);
        b.observe({3.0, 30.0}, 100);
        b.observe({3.0, 30.0}, 100);
        QVERIFY(std::fabs(a.gradSq() - b.gradSq()) < 1e-12);
        QVERIFY(std::fabs(a.trace() - b.trace()) < 1e-12);
        NoiseScaleTracker c;
        c.restore(a.state());
        QCOMPARE(c.criticalBatchTokens(), a.criticalBatchTokens());
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, c.restore({1.0}));
    }

    // The hooks see each micro-batch's own gradient: y = (w . x) summed, with w used twice in
    // the graph (the sum of both uses is the gradient), the embedding-like parameter in another
    // group. Squared norms by hand, divided by the token counts.
    void freshGradientNormsAreEachMicroBatchsOwn() {
        auto w = torch::tensor({1.0, 2.0}, torch::kFloat64).requires_grad_(true);
        auto v = torch::tensor({3.0}, torch::kFloat64).requires_grad_(true);
        FreshGradientNorms norms({w, v}, {0, 3}, torch::kCPU);
        norms.beginWindow();
        const std::vector<std::pair<torch::Tensor, int64_t>> batches{
            {torch::tensor({1.0, 1.0}, torch::kFloat64), 2}, {torch::tensor({2.0, -1.0}, torch::kFloat64), 5}};
        for (const auto& [x, n] : batches) {
            norms.beginMicroBatch();
            ((w * x).sum() + (w * x).sum() + v.sum() * 4.0).backward();  // dw = 2x, dv = 4
            norms.endMicroBatch(torch::tensor(n, torch::kInt64));
        }
        const auto sums = norms.windowSums();
        // group 0: |2 (1, 1)|^2 / 2 + |2 (2, -1)|^2 / 5 = 4 + 4; group 3: 16 / 2 + 16 / 5.
        QVERIFY(std::fabs(sums[0].item<double>() - (8.0 / 2 + 20.0 / 5)) < 1e-12);
        QVERIFY(std::fabs(sums[3].item<double>() - (16.0 / 2 + 16.0 / 5)) < 1e-12);
        QCOMPARE(sums[4].item<double>(), 2.0);  // micro-batches with tokens
        // Accumulated .grad (both micro-batches) did not enter: the window's own norm differs.
        QVERIFY(std::fabs(w.grad().square().sum().item<double>() - 36.0) < 1e-12);
    }

    // In training: the parts do not depend on how the window's micro-batches of b sequences are
    // spread over ranks (K 2 x W 1 against K 1 x W 2, fp64), every group's parts sum to the
    // total's (the per-group rule of docs/design/noise_scale.md), and M = 1 gives none.
    void theEstimateDoesNotDependOnTheSplit() {
        const auto single = windowsOf(noiseConfig(2, 2, 1), 3, true);
        const auto spread = windowsOf(noiseConfig(2, 1, 2), 3, true);
        QCOMPARE(single.size(), spread.size());
        for (size_t i = 0; i < single.size(); ++i) {
            QVERIFY(single[i].noise && spread[i].noise);
            QVERIFY2(relative(single[i].noise->trace, spread[i].noise->trace) < 1e-9,
                     qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(single[i].noise->trace).arg(spread[i].noise->trace)));
            QVERIFY(std::fabs(single[i].noise->grad_sq - spread[i].noise->grad_sq) <= 1e-9 * std::fabs(single[i].noise->trace));
            double trace = 0, grad_sq = 0;
            for (const auto& g : single[i].noise_groups) trace += g->trace, grad_sq += g->grad_sq;
            QVERIFY(relative(trace, single[i].noise->trace) < 1e-9);
            QVERIFY(std::fabs(grad_sq - single[i].noise->grad_sq) <= 1e-9 * std::fabs(single[i].noise->trace));
            QVERIFY(single[i].noise->trace > 0);
        }
        for (const auto& w : windowsOf(noiseConfig(4, 1, 1), 2, false)) QVERIFY(!w.noise.has_value());
    }

    // At fixed weights over the validation windows (the `noise-scale` command): against a brute
    // force written here, every micro-batch's gradient computed on its own as one flat fp64
    // vector, the formulas of docs/design/noise_scale.md applied by hand.
    void theProbeAgreesWithABruteForceReference() {
        RunConfig config = noiseConfig(2, 1, 1);
        config.data.source = "markov";
        config.train.eval_windows = 12;
        Transformer model(config.model);
        initializeWeights(model, 7);
        model->to(torch::kFloat64);
        auto source = openTokenSource(config);
        const int64_t b = 3;
        const NoiseScaleMeasurement probe = measureNoiseScale(model, *source, config, torch::kCPU, b);
        QCOMPARE(probe.micro_batches, int64_t(4));  // 12 windows / 3

        std::vector<torch::Tensor> each;
        std::vector<double> counts;
        for (int64_t k = 0; k < 4; ++k) {
            for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
            std::vector<int64_t> indices{3 * k, 3 * k + 1, 3 * k + 2};
            MicroBatch batch = readMicroBatch(*source, Split::Validation, indices, config.train.seq_len);
            LossParts parts = model->loss(batch.tokens, batch.targets);
            (parts.token_loss_sum + parts.aux_loss_sum).backward();
            std::vector<torch::Tensor> flat;
            for (auto& p : model->parameters())
                flat.push_back(p.grad().defined() ? p.grad().reshape({-1}) : torch::zeros({p.numel()}, torch::kFloat64));
            each.push_back(torch::cat(flat));
            counts.push_back(double(parts.token_count.item<int64_t>()));
        }
        for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
        const double N = std::accumulate(counts.begin(), counts.end(), 0.0), M = 4;
        double A = 0;
        torch::Tensor sum = torch::zeros_like(each[0]);
        for (size_t k = 0; k < each.size(); ++k) {
            A += each[k].square().sum().item<double>() / (N * counts[k]);
            sum += each[k];
        }
        const double T = sum.square().sum().item<double>() / (N * N);
        const double grad_sq = (M * T - A) / (M - 1), trace = N * (A - T) / (M - 1);
        QVERIFY2(relative(probe.trace, trace) < 1e-6, qPrintable(QString("%1 vs %2").arg(probe.trace).arg(trace)));
        QVERIFY2(std::fabs(probe.grad_sq - grad_sq) <= 1e-6 * std::fabs(trace),
                 qPrintable(QString("%1 vs %2").arg(probe.grad_sq).arg(grad_sq)));
        QCOMPARE(probe.tokens, int64_t(N));
        // Too few windows for two micro-batches: refused, naming the size.
        QVERIFY_THROWS_EXCEPTION(ConfigError, measureNoiseScale(model, *source, config, torch::kCPU, 7));
    }

    // The metrics of a run: present every logged step with M >= 2, finite, the critical batch
    // positive once smoothed; none at all with M = 1 or with train.noise_scale off; the smoothed
    // state continues bitwise across a resume.
    void aRunLogsTheCriticalBatchAndResumesIt() {
        auto run = [](RunConfig config, SessionOptions options = {}) {
            TrainingSession session(config, options);
            auto inbox = session.bus().subscribe();
            session.start();
            if (!session.wait(std::chrono::minutes(2))) qFatal("run did not finish");
            std::map<std::string, std::vector<double>> series;
            for (const auto& p : inbox->drain().points)
                if (p.key.rfind("noise/", 0) == 0) series[p.key].push_back(p.value);
            return series;
        };
        RunConfig config = noiseConfig(2, 4, 1);
        config.train.steps = 6;
        const auto whole = run(config);
        QCOMPARE(whole.at("noise/critical_batch_tokens").size(), size_t(6));
        for (double v : whole.at("noise/critical_batch_tokens")) QVERIFY(std::isfinite(v) && v >= 0);
        QVERIFY(whole.at("noise/critical_batch_tokens").back() > 0);
        QVERIFY(whole.count("noise/experts/trace") && whole.count("noise/attention/trace"));
        QVERIFY(whole.count("noise/critical_batch_sequences"));
        // Resume at step 3 to the same smoothed values at steps 4-6, bit for bit.
        QTemporaryDir dir;
        SessionOptions first;
        first.checkpoint_dir = dir.path().toStdString();
        RunConfig three = config;
        three.train.steps = 6;
        three.train.checkpoint_every = 3;
        RunConfig stop_at_three = three;
        stop_at_three.train.steps = 3;
        run(stop_at_three, first);
        std::vector<std::string> skipped;
        const auto checkpoint = checkpointToResume(first.checkpoint_dir, skipped);
        QVERIFY(checkpoint.has_value());
        SessionOptions resume;
        resume.resume_from = checkpoint->path;
        const auto rest = run(three, resume);
        const auto& tail = rest.at("noise/critical_batch_tokens");
        QCOMPARE(tail.size(), size_t(3));
        for (size_t i = 0; i < 3; ++i) QVERIFY(tail[i] == whole.at("noise/critical_batch_tokens")[i + 3]);  // bitwise
        QVERIFY(run(noiseConfig(4, 1, 1)).empty());
        // A ramp from one micro-batch a window (K 1) to four: no estimate while K is 1, one
        // every step after.
        RunConfig ramp = noiseConfig(2, 4, 1);
        ramp.train.steps = 6;
        ramp.train.batch_policy = "ramp";
        ramp.train.batch_ramp_start = 2;
        ramp.train.batch_ramp_tokens = 8 * ramp.train.seq_len;
        const auto ramped = run(ramp);
        QVERIFY(ramped.count("noise/grad_sq"));
        QVERIFY2(ramped.at("noise/grad_sq").size() >= 3 && ramped.at("noise/grad_sq").size() < 6,
                 qPrintable(QString::number(ramped.at("noise/grad_sq").size())));
        RunConfig off = config;
        off.train.noise_scale = false;
        QVERIFY(run(off).empty());
    }
};

QTEST_APPLESS_MAIN(TestNoiseScale)
#include "test_noise_scale.moc"
