// Accumulation conformance suite (docs/design/accumulation.md): token-weighted windows across rank threads,
// one reduction per window, schedule and clipping on optimizer steps, reproducibility, failures.
#include <QtTest/QtTest>

#include <QScopeGuard>
#include <QTemporaryDir>
#include <cmath>
#include <fstream>
#include <numbers>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "cpu_paths_report.h"
#include "data/batch_sampler.h"
#include "data/token_source.h"
#include "conformance_setup.h"
#include "rank_threads.h"
#include "parallel/gradient_buckets.h"
#include "comm/in_process_collectives.h"
#include "kernels/compute_scope.h"
#include "train/rank_trainer.h"
#include "trainbench/compute_dtype.h"
#include "trainbench/config_io.h"
#include "train_and_collect.h"

using namespace trainbench;

namespace {

RunConfig tinyConfig() { return conformanceConfig(); }

// The gradient of optimizer step 0 (the reduced sums, divided by N here as the update does;
// before clipping) as seen by rank 0, with W rank threads on in-process collectives.
struct WindowProbe {
    std::vector<torch::Tensor> gradients;  // rank 0's, cloned
    WindowResult window;
    int64_t buckets = 0;
    int64_t overlapped = 0;  // buckets started during the last backward
};

WindowProbe probeWindow(const RunConfig& config, bool fp64, int64_t step = 0, int64_t bucket_bytes = 25 << 20) {
    WindowProbe probe;
    RankThreadOptions options;
    options.fp64 = fp64;
    options.bucket_bytes = bucket_bytes;
    onRankTrainers(config, options, [&](int r, RankTrainer& trainer) {
        WindowResult window;
        trainer.accumulateWindow(step, window);
        if (r != 0) return;
        probe.window = window;
        probe.buckets = trainer.bucketCount();
        probe.overlapped = trainer.bucketsOverlapped();
        // .grad holds the window's sums until the update divides them by N.
        for (auto& p : trainer.model()->parameters()) probe.gradients.push_back(p.grad() / double(window.tokens));
    });
    return probe;
}

double maxRelativeGradientError(const WindowProbe& a, const WindowProbe& reference) {
    double worst = 0;
    double scale = 0;
    for (const auto& g : reference.gradients) scale = std::max(scale, g.abs().max().item<double>());
    for (size_t i = 0; i < a.gradients.size(); ++i)
        worst = std::max(worst, (a.gradients[i] - reference.gradients[i]).abs().max().item<double>() / scale);
    return worst;
}

}  // namespace

class TestAccumulation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Items 1, 12 and 14: every split of B = 8 logs the same loss and gradient norm at every step.
    void splitsOfOneGlobalBatchAgreeAtEveryStep() {
        const RunConfig base = tinyConfig();
        const Series reference = trainAndCollect(withSplit(base, 8, 1, 1));
        QCOMPARE(reference.loss.size(), size_t(base.train.steps));
        const std::vector<std::array<int64_t, 3>> splits = {{2, 4, 1}, {2, 2, 2}, {1, 4, 2}, {1, 8, 1}, {2, 1, 4}};
        for (const auto& [m, K, W] : splits) {
            const Series s = trainAndCollect(withSplit(base, m, K, W));
            for (size_t i = 0; i < reference.loss.size(); ++i) {
                QVERIFY2(relativeDifference(s.loss[i], reference.loss[i]) < 1e-5,
                         qPrintable(QString("(%1,%2,%3) step %4 loss %5 vs %6").arg(m).arg(K).arg(W).arg(i + 1)
                                        .arg(s.loss[i], 0, 'g', 10).arg(reference.loss[i], 0, 'g', 10)));
                QVERIFY2(relativeDifference(s.grad_norm[i], reference.grad_norm[i]) < 1e-5,
                         qPrintable(QString("(%1,%2,%3) step %4 grad norm").arg(m).arg(K).arg(W).arg(i + 1)));
            }
        }
        // Bitwise reproducibility: the same (m, K, W, seed) twice.
        const Series again = trainAndCollect(withSplit(base, 2, 2, 2));
        const Series first = trainAndCollect(withSplit(base, 2, 2, 2));
        QVERIFY(again.loss == first.loss);
        QVERIFY(again.grad_norm == first.grad_norm);
    }

    // Item 1 in fp64 with ragged documents: gradients equal the full batch's to 1e-10.
    void tokenWeightedGradientsWithPaddingInFp64() {
        QTemporaryDir dir;
        const RunConfig base = raggedTextConfig(writeRaggedCorpus(dir));
        const WindowProbe full = probeWindow(withSplit(base, 8, 1, 1), true);
        QVERIFY(full.window.tokens > 0);
        QVERIFY(full.window.tokens < 8 * base.train.seq_len);  // padding really is excluded
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{2, 4, 1}, {2, 2, 2}, {1, 4, 2}, {1, 2, 4}}) {
            const WindowProbe split = probeWindow(withSplit(base, m, K, W), true);
            QCOMPARE(split.window.tokens, full.window.tokens);
            const double error = maxRelativeGradientError(split, full);
            QVERIFY2(error < 1e-10, qPrintable(QString("(%1,%2,%3): %4").arg(m).arg(K).arg(W).arg(error)));
            // Item 11: expert loads over the window and the ranks equal the full batch's exactly.
            for (size_t l = 0; l < full.window.loads.size(); ++l) QVERIFY(torch::equal(split.window.loads[l], full.window.loads[l]));
        }
    }

    // Prompt/completion data (the prompts' targets not counted, so the micro-batches of one
    // window count very different numbers of targets): every split logs the full batch's loss
    // and gradient norm (fp32, 1e-5) and, in fp64, its gradients to 1e-10, packed and padded.
    void promptCompletionSplitsAgree() {
        QTemporaryDir dir;
        const std::string corpus = writePairCorpus(dir);
        for (const char* layout : {"padded", "packed"}) {
            const RunConfig base = pairConfig(corpus, layout);
            // The premise: counted targets differ between the micro-batches of m = 2.
            std::set<int64_t> per_micro_batch;
            {
                const auto source = openTokenSource(base);
                for (int64_t k = 0; k < 4; ++k) {
                    const auto indices = sourceSampleIndices(sampleIndices(0, 0, k, 2, 4, 1),
                                                             source->sampleCount(Split::Train, base.train.seq_len + 1),
                                                             static_cast<uint64_t>(base.train.seed));
                    per_micro_batch.insert(readMicroBatch(*source, Split::Train, indices, base.train.seq_len)
                                               .targets.ne(-1).sum().item<int64_t>());
                }
            }
            QVERIFY2(per_micro_batch.size() >= 2, qPrintable(QString("%1: %2 distinct counts, from %3 to %4").arg(layout).arg(per_micro_batch.size()).arg(*per_micro_batch.begin()).arg(*per_micro_batch.rbegin())));
            const Series reference = trainAndCollect(withSplit(base, 8, 1, 1));
            QCOMPARE(reference.loss.size(), size_t(base.train.steps));
            const WindowProbe full = probeWindow(withSplit(base, 8, 1, 1), true);
            QVERIFY(full.window.tokens > 0 && full.window.tokens < 8 * base.train.seq_len / 2);
            for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{2, 4, 1}, {2, 2, 2}, {1, 4, 2}}) {
                const Series s = trainAndCollect(withSplit(base, m, K, W));
                for (size_t i = 0; i < reference.loss.size(); ++i) {
                    QVERIFY2(relativeDifference(s.loss[i], reference.loss[i]) < 1e-5,
                             qPrintable(QString("%1 (%2,%3,%4) step %5 loss").arg(layout).arg(m).arg(K).arg(W).arg(i + 1)));
                    QVERIFY2(relativeDifference(s.grad_norm[i], reference.grad_norm[i]) < 1e-5,
                             qPrintable(QString("%1 (%2,%3,%4) step %5 grad norm").arg(layout).arg(m).arg(K).arg(W).arg(i + 1)));
                }
                const WindowProbe split = probeWindow(withSplit(base, m, K, W), true);
                QCOMPARE(split.window.tokens, full.window.tokens);
                const double error = maxRelativeGradientError(split, full);
                QVERIFY2(error < 1e-10, qPrintable(QString("%1 (%2,%3,%4): %5").arg(layout).arg(m).arg(K).arg(W).arg(error)));
            }
        }
    }

    // Item 2: rank 0 holds one target token, rank 1 holds 64; the reduced gradient is the full
    // batch's (fp64), not the mean of two per-rank means.
    void unbalancedRanksGiveTheFullBatchGradient() {
        QTemporaryDir dir;
        const std::string corpus = dir.filePath("two.txt").toStdString(), val = dir.filePath("val.txt").toStdString();
        {
            std::ofstream out(corpus);
            out << "q\n\n" << std::string(64, 'x').replace(3, 20, "the quick brown fox ") << "\n\n";
            std::ofstream(val) << "held out text\n\n";
        }
        RunConfig base = raggedTextConfig(corpus);
        base.train.seq_len = 64;
        base.data.val_path = val;
        const WindowProbe full = probeWindow(withSplit(base, 2, 1, 1), true);
        QCOMPARE(full.window.tokens, int64_t(1 + 64));  // "q"->EOD, and 64 of the long row
        const WindowProbe ranks = probeWindow(withSplit(base, 1, 1, 2), true);
        QCOMPARE(ranks.window.tokens, full.window.tokens);
        QVERIFY(maxRelativeGradientError(ranks, full) < 1e-10);
    }

    // Item 3: targets that are all ignored contribute an exact zero loss sum, a zero count and
    // zero, finite gradients (the trainer then skips the step with a warning).
    void aMicroBatchWithoutTargetsContributesNothing() {
        RunConfig c = tinyConfig();
        Transformer model(c.model);
        initializeWeights(model, 7);
        auto tokens = torch::randint(0, c.model.vocab_size, {2, 8}, torch::kInt64);
        auto targets = torch::full({2, 8}, -1, torch::kInt64);
        LossParts parts = model->loss(tokens, targets);
        QCOMPARE(parts.token_count.item<int64_t>(), int64_t(0));
        QCOMPARE(parts.token_loss_sum.item<double>(), 0.0);
        (parts.token_loss_sum + parts.aux_loss_sum).backward();
        for (auto& p : model->parameters())
            if (p.grad().defined()) QVERIFY(torch::isfinite(p.grad()).all().item<bool>());
        for (auto& p : model->parameters())
            if (p.grad().defined() && p.dim() >= 2 && p.size(0) == c.model.vocab_size)  // the head: no target, no signal
                QCOMPARE(p.grad().abs().max().item<double>(), 0.0);
    }

    // Item 9: a parameter only one rank used (an expert no token of rank 0 reached) still gets
    // the sum of both ranks' gradients, and a single rank gives its unused parameters a zero
    // gradient rather than none, so weight decay treats them alike.
    void aParameterOnlyOneRankUsedIsReducedCorrectly() {
        auto hub = std::make_shared<CollectiveHub>(2, std::chrono::seconds(60));
        std::vector<std::vector<torch::Tensor>> grads(2);
        std::vector<std::thread> threads;
        for (int r = 0; r < 2; ++r)
            threads.emplace_back([&, r] {
                InProcessCollectives collectives(hub, r, 2);
                std::vector<torch::Tensor> params{torch::zeros({3}, torch::requires_grad()),
                                                  torch::zeros({2, 2}, torch::requires_grad())};
                GradientBuckets buckets(params);  // .grad of each parameter: a view of its bucket
                params[0].grad().fill_(double(r + 1));
                if (r == 1) params[1].grad().fill_(0.25);  // only rank 1 used it
                buckets.reduce(collectives);
                for (auto& p : params) grads[r].push_back(p.grad().clone());
            });
        for (auto& t : threads) t.join();
        for (int r = 0; r < 2; ++r) {
            QVERIFY(torch::equal(grads[r][0], torch::full({3}, 3.0)));
            QVERIFY(torch::equal(grads[r][1], torch::full({2, 2}, 0.25)));
        }
        std::vector<torch::Tensor> single{torch::ones({4}, torch::requires_grad())};
        GradientBuckets alone(single);
        QVERIFY(single[0].grad().defined());
        QCOMPARE(single[0].grad().abs().sum().item<double>(), 0.0);
    }

    // An expert no token reached gets no gradient, and its bucket would wait for it until the
    // backward ends, holding every later bucket back. Told beforehand, the buckets start anyway:
    // here both during the backward instead of none; the sums are the same.
    void bucketsDoNotWaitForParametersWithoutGradient() {
        auto hub = std::make_shared<CollectiveHub>(1, std::chrono::seconds(60));
        InProcessCollectives collectives(hub, 0, 1);
        for (bool told : {false, true}) {
            std::vector<torch::Tensor> params{torch::ones({3}, torch::requires_grad()),   // used
                                              torch::ones({2}, torch::requires_grad())};  // an idle expert
            // One parameter a bucket: the idle one's bucket (reverse order) comes first.
            GradientBuckets buckets(params, /*bucket_bytes=*/4, /*first_bucket_bytes=*/4);
            QCOMPARE(buckets.count(), int64_t(2));
            buckets.beginOverlap(collectives);
            buckets.armHooks();
            if (told) buckets.noGradientComing({params[1]});
            (params[0] * 2.0).sum().backward();
            buckets.launchRemaining();
            const int64_t during = buckets.launchedDuringBackward();
            buckets.finishOverlap();
            QCOMPARE(during, told ? int64_t(2) : int64_t(0));
            QVERIFY(torch::equal(params[0].grad(), torch::full({3}, 2.0)));
            QVERIFY(torch::equal(params[1].grad(), torch::zeros({2})));
        }
    }

    // Sync-each mode keeps running sums across the window; a window every rank drops (out of
    // memory) must take them along, or the retried window would add the failed one's gradients.
    void aDroppedWindowLeavesNoRunningSums() {
        auto hub = std::make_shared<CollectiveHub>(1, std::chrono::seconds(60));
        InProcessCollectives collectives(hub, 0, 1);
        std::vector<torch::Tensor> params{torch::zeros({3}, torch::requires_grad())};
        GradientBuckets buckets(params);
        params[0].grad().fill_(5.0);  // the failed window's first micro-batch
        buckets.reduceIntoSums(collectives);
        buckets.dropSums();
        params[0].grad().fill_(1.0);  // the retried window: two micro-batches
        buckets.reduceIntoSums(collectives);
        params[0].grad().fill_(2.0);
        buckets.reduceIntoSums(collectives);
        buckets.finishSums();
        QVERIFY(torch::equal(params[0].grad(), torch::full({3}, 3.0)));
    }

    // Item 10: under bf16 autocast the parameter gradients stay fp32 and accumulate exactly:
    // 64 backward passes each adding 2^-10 to a gradient of 1.0 give 1.0625, where a bf16
    // accumulator (8-bit mantissa) would round every addition away and stay at 1.0.
    void gradientsAccumulateInFp32UnderBf16() {
        // ATen's autocast form (the kernels off: what CUDA runs); the kernels' bf16 products
        // keep fp32 tensors throughout (test_cpu_kernels).
        kernels::setCpuKernelsEnabled(false);
        const auto restore = qScopeGuard([] { kernels::setCpuKernelsEnabled(true); });
        auto w = torch::zeros({1, 1}, torch::requires_grad());
        w.mutable_grad() = torch::ones({1, 1});
        const auto x = torch::full({1, 1}, std::ldexp(1.0, -10));
        for (int k = 0; k < 64; ++k) {
            ComputeScope bf16(c10::DeviceType::CPU, ComputePrecision::kBf16);
            auto y = torch::nn::functional::linear(x, w);  // d y / d w = x
            QCOMPARE(y.scalar_type(), torch::kBFloat16);   // the product really ran in bf16
            y.sum().backward();
        }
        QCOMPARE(w.grad().scalar_type(), torch::kFloat32);
        QVERIFY(std::fabs(w.grad().item<double>() - 1.0625) <= 1e-6 * 1.0625);
        auto bf16 = torch::ones({1}, torch::kBFloat16);
        for (int k = 0; k < 64; ++k) bf16 += std::ldexp(1.0, -10);
        QCOMPARE(bf16.item<double>(), 1.0);  // the failure fp32 buffers avoid
        // Leaving the scope restores plain fp32 arithmetic on this thread.
        QCOMPARE(torch::nn::functional::linear(x, w).scalar_type(), torch::kFloat32);
    }

    // A bf16 run trains like the fp32 one: same data, losses within 2% at every step.
    void bf16RunTracksTheFp32Run() {
        RunConfig config = withSplit(tinyConfig(), 2, 2, 2);
        config.train.steps = 6;
        const Series fp32 = trainAndCollect(config);
        config.runtime.dtype = "bf16";
        const Series bf16 = trainAndCollect(config);
        QCOMPARE(bf16.loss.size(), fp32.loss.size());
        bool any_difference = false;
        for (size_t i = 0; i < fp32.loss.size(); ++i) {
            QVERIFY2(relativeDifference(bf16.loss[i], fp32.loss[i]) < 2e-2,
                     qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(bf16.loss[i]).arg(fp32.loss[i])));
            any_difference = any_difference || bf16.loss[i] != fp32.loss[i];
        }
        QVERIFY(any_difference);  // it really computed in bf16
    }

    // The bf16 conformance: splits of one global batch agree in bf16 too, within its rounding
    // (each split multiplies matrices of other shapes, so not bitwise).
    void bf16SplitsOfOneGlobalBatchAgree() {
        RunConfig base = tinyConfig();
        base.runtime.dtype = "bf16";
        const Series reference = trainAndCollect(withSplit(base, 8, 1, 1));
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{2, 4, 1}, {2, 2, 2}, {1, 4, 2}}) {
            const Series s = trainAndCollect(withSplit(base, m, K, W));
            QCOMPARE(s.loss.size(), reference.loss.size());
            for (size_t i = 0; i < reference.loss.size(); ++i) {
                QVERIFY2(relativeDifference(s.loss[i], reference.loss[i]) < 5e-3,
                         qPrintable(QString("(%1,%2,%3) step %4 loss %5 vs %6").arg(m).arg(K).arg(W).arg(i + 1)
                                        .arg(s.loss[i], 0, 'g', 10).arg(reference.loss[i], 0, 'g', 10)));
                QVERIFY2(relativeDifference(s.grad_norm[i], reference.grad_norm[i]) < 3e-2,
                         qPrintable(QString("(%1,%2,%3) step %4 grad norm %5 vs %6").arg(m).arg(K).arg(W).arg(i + 1)
                                        .arg(s.grad_norm[i], 0, 'g', 10).arg(reference.grad_norm[i], 0, 'g', 10)));
            }
        }
    }

    // runtime.dtype auto: the rule for every kind of machine, whatever CPU runs the test.
    void autoDtypeFollowsTheDeviceTheCpuAndTheWidth() {
        RunConfig c = tinyConfig();
        const CpuMatrixFeatures plain, avx512{true, false}, amx{false, true};
        c.runtime.dtype = "auto";
        c.model.dim = 64;
        QCOMPARE(resolveComputeDtype(c, false, plain), ComputeDtype::Fp32);
        QCOMPARE(resolveComputeDtype(c, false, avx512), ComputeDtype::Fp32);  // too narrow to pay
        QCOMPARE(resolveComputeDtype(c, true, plain), ComputeDtype::Bf16);    // a GPU
        c.model.dim = 256;
        QCOMPARE(resolveComputeDtype(c, false, plain), ComputeDtype::Fp32);
        QCOMPARE(resolveComputeDtype(c, false, avx512), ComputeDtype::Bf16);
        QCOMPARE(resolveComputeDtype(c, false, amx), ComputeDtype::Bf16);
        QVERIFY(QString::fromStdString(explainComputeDtype(c, false, amx)).contains("AMX"));
        QVERIFY(QString::fromStdString(explainComputeDtype(c, false, plain)).contains("neither"));
        c.runtime.dtype = "fp32";  // an explicit choice stands everywhere
        QCOMPARE(resolveComputeDtype(c, true, amx), ComputeDtype::Fp32);
        c.runtime.dtype = "bf16";
        QCOMPARE(resolveComputeDtype(c, false, plain), ComputeDtype::Bf16);
    }

    // An auto run trains exactly as the dtype it resolves to (bitwise), and says which it chose.
    void anAutoRunTrainsAsItsResolvedDtype() {
        for (int64_t dim : {32, 256}) {
            RunConfig c = withSplit(tinyConfig(), 4, 2, 1);
            c.model.dim = dim;
            c.train.steps = 3;
            c.runtime.dtype = "auto";
            const std::string resolved = choiceName(resolveComputeDtype(c, false));
            TrainingSession session(c);
            auto inbox = session.bus().subscribe();
            session.start();
            QVERIFY(session.wait(std::chrono::minutes(5)));
            QCOMPARE(session.status(), RunStatus::Completed);
            std::vector<double> losses;
            QString said;
            BusBatch batch = inbox->drain();
            for (const auto& p : batch.points)
                if (p.key == "train/loss") losses.push_back(p.value);
            for (const auto& e : batch.events)
                if (e.kind == "precision") said = QString::fromStdString(e.message);
            QVERIFY2(said.contains(QString::fromStdString("computing in " + resolved)), qPrintable(said));
            c.runtime.dtype = resolved;
            const Series explicit_run = trainAndCollect(c);
            QVERIFY2(losses == explicit_run.loss, qPrintable(QString("dim %1 as %2").arg(dim).arg(resolved.c_str())));
        }
    }

    // Item 5: 10 micro-batches with K = 4 make windows of 4, 4 and 2. With "scale" the third
    // window's gradient is the full-batch gradient of its 2 micro-batches (not half of it); with
    // "drop" there are only two steps.
    void anIncompleteLastWindowIsScaledByItsOwnTokens() {
        QTemporaryDir dir;
        RunConfig base = raggedTextConfig(writeRaggedCorpus(dir));
        base.train.samples = 10;
        const RunConfig split = withSplit(base, 1, 4, 1);
        QCOMPARE(split.optimizerSteps(), int64_t(3));
        QCOMPARE(split.lastWindowMicroBatches(), int64_t(2));
        // Samples 8 and 9 are the third window; as one micro-batch of 2 they are step 4 of B = 2.
        const WindowProbe third = probeWindow(split, true, 2);
        RunConfig whole = withSplit(base, 2, 1, 1);
        whole.train.samples = 0;
        whole.train.steps = 5;
        const WindowProbe reference = probeWindow(whole, true, 4);
        QCOMPARE(third.window.tokens, reference.window.tokens);
        QVERIFY2(maxRelativeGradientError(third, reference) < 1e-10,
                 qPrintable(QString::number(maxRelativeGradientError(third, reference))));
        // Other splits of the same windows (4, 4, 2 samples) log the same losses at every step.
        const Series a = trainAndCollect(split);
        QCOMPARE(a.loss.size(), size_t(3));
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{2, 2, 1}, {1, 2, 2}}) {
            const Series b = trainAndCollect(withSplit(base, m, K, W));
            QCOMPARE(b.loss.size(), a.loss.size());
            for (size_t i = 0; i < a.loss.size(); ++i) QVERIFY(relativeDifference(b.loss[i], a.loss[i]) < 1e-5);
        }
        RunConfig dropped = split;
        dropped.train.incomplete_window = "drop";
        QCOMPARE(dropped.optimizerSteps(), int64_t(2));
        QCOMPARE(trainAndCollect(dropped).loss.size(), size_t(2));
        // A budget that is no whole number of micro-batches per rank is refused with the neighbours.
        RunConfig ragged = withSplit(base, 2, 2, 1);
        ragged.train.samples = 9;
        auto issues = validateRunConfig(ragged);
        QVERIFY(!issues.empty());
        QCOMPARE(QString::fromStdString(issues.front().path), QString("train.samples"));
        QVERIFY(QString::fromStdString(issues.front().message).contains("use 8 or 10"));
    }

    // The chunked head (runtime.head_chunk_tokens) against the whole logits on what masks
    // targets: padded ragged documents (padding not counted), prompt/completion pairs (prompts
    // not counted) and an incomplete last window, at chunks of 1 token, 5 (a short last chunk),
    // the rule's and the whole micro-batch; in fp64 the window's gradients (the head's weight,
    // the embedding and every block through dL/dx) to 1e-10 of the whole head's, and its token
    // count exactly; in fp32 the logged losses to 1e-6.
    void theChunkedHeadGivesTheWholeHeadsGradients() {
        QTemporaryDir dir;
        const RunConfig ragged = raggedTextConfig(writeRaggedCorpus(dir));
        RunConfig incomplete = withSplit(ragged, 1, 4, 1);
        incomplete.train.samples = 10;
        const std::vector<std::pair<QString, RunConfig>> cases = {
            {"padded documents", withSplit(ragged, 2, 2, 1)},
            {"prompt/completion pairs", withSplit(pairConfig(writePairCorpus(dir), "packed"), 2, 2, 2)},
            {"an incomplete window", incomplete},
        };
        for (const auto& [name, base] : cases) {
            RunConfig whole = base;
            whole.runtime.head_chunk_tokens = 0;
            const int64_t last_step = base.optimizerSteps() - 1;
            const WindowProbe reference = probeWindow(whole, true, last_step);
            const Series reference_losses = trainAndCollect(whole);
            for (const std::optional<int64_t> chunk : {std::optional<int64_t>(1), std::optional<int64_t>(5),
                                                       std::optional<int64_t>(), std::optional<int64_t>(4096)}) {
                RunConfig chunked = base;
                chunked.runtime.head_chunk_tokens = chunk;
                const QString label = QString("%1, chunk %2").arg(name).arg(chunk ? QString::number(*chunk) : "auto");
                const WindowProbe probe = probeWindow(chunked, true, last_step);
                QCOMPARE(probe.window.tokens, reference.window.tokens);
                const double error = maxRelativeGradientError(probe, reference);
                QVERIFY2(error < 1e-10, qPrintable(QString("%1: %2").arg(label).arg(error)));
                const Series losses = trainAndCollect(chunked);
                QCOMPARE(losses.loss.size(), reference_losses.loss.size());
                for (size_t i = 0; i < losses.loss.size(); ++i)
                    QVERIFY2(relativeDifference(losses.loss[i], reference_losses.loss[i]) < 1e-6,
                             qPrintable(QString("%1: step %2 loss %3 vs %4").arg(label).arg(i + 1)
                                            .arg(losses.loss[i], 0, 'g', 10).arg(reference_losses.loss[i], 0, 'g', 10)));
            }
        }
    }

    // Negative control for item 1: averaging each micro-batch over its own tokens and then over K
    // gives a different gradient when the micro-batches hold different numbers of targets.
    void perMicroBatchAveragingIsMeasurablyWrong() {
        QTemporaryDir dir;
        RunConfig config = withSplit(raggedTextConfig(writeRaggedCorpus(dir)), 4, 2, 1);
        config.model.seq_aux_loss_alpha = 0;
        const WindowProbe correct = probeWindow(config, true);
        // Recompute the naive way by hand from the same samples and the same initial weights.
        RunControl control;
        std::atomic<int64_t> steps{0};
        auto hub = std::make_shared<CollectiveHub>(1, std::chrono::seconds(10));
        InProcessCollectives single(hub, 0, 1);
        RankSetup setup;
        setup.config = &config;
        setup.collectives = &single;
        setup.control = &control;
        setup.completed_steps = &steps;
        setup.fp64 = true;
        RankTrainer trainer(setup);
        trainer.prepare();
        auto source = openTokenSource(config);
        std::vector<int64_t> counts;
        for (int64_t k = 0; k < 2; ++k) {
            auto indices = sourceSampleIndices(sampleIndices(0, 0, k, 4, 2, 1), source->sampleCount(Split::Train, 17),
                                               static_cast<uint64_t>(config.train.seed));
            MicroBatch batch = readMicroBatch(*source, Split::Train, indices, config.train.seq_len);
            LossParts parts = trainer.model()->loss(batch.tokens, batch.targets);
            counts.push_back(parts.token_count.item<int64_t>());
            (parts.token_loss_sum / parts.token_count.to(torch::kFloat64) / 2.0).backward();
        }
        QVERIFY(counts[0] != counts[1]);
        WindowProbe naive;
        for (auto& p : trainer.model()->parameters()) naive.gradients.push_back(p.grad().clone());
        QVERIFY(maxRelativeGradientError(naive, correct) > 1e-2);
    }

    // Item 8: no collective during micro-batches 1..K-1; buckets + 1 per step, for any K and
    // W > 1. A single rank has no gradients to reduce: only the window's statistics travel.
    void collectivesPerStepAreBucketsPlusOne() {
        RunConfig base = tinyConfig();
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{8, 1, 1}, {1, 8, 1}, {2, 2, 2}, {1, 4, 2}}) {
            const WindowProbe probe = probeWindow(withSplit(base, m, K, W), false);
            QVERIFY(probe.buckets >= 1);
            QCOMPARE(probe.window.collectives, W == 1 ? int64_t(1) : probe.buckets + 1);
        }
        const Series s = trainAndCollect(withSplit(base, 1, 4, 2));
        for (double c : s.collectives) QCOMPARE(c, s.collectives.front());
    }

    // Item 8: reducing every micro-batch gives the same gradients (and K * buckets + 1 calls).
    void syncEachMicroBatchGivesTheSameGradients() {
        RunConfig config = withSplit(tinyConfig(), 2, 4, 2);
        const WindowProbe deferred = probeWindow(config, false);
        config.train.sync_each_micro_batch = true;
        const WindowProbe eager = probeWindow(config, false);
        QCOMPARE(eager.window.collectives, 4 * eager.buckets + 1);
        QVERIFY(maxRelativeGradientError(eager, deferred) < 1e-6);
    }

    // Item 8, overlap: with small buckets the all-reduces start while the last backward runs
    // (every bucket of a dense model, whose backward reaches every parameter; at least the
    // first with MoE, where a bucket holding an expert no token of the last micro-batch chose
    // waits for the backward's end), the call count stays buckets + 1, and the gradients are
    // bitwise those of reducing after the backward.
    void bucketsAreReducedDuringTheLastBackward() {
        for (bool dense : {true, false}) {
            RunConfig config = withSplit(tinyConfig(), 2, 2, 2);
            if (dense) config.model.n_dense_layers = config.model.n_layers;
            const WindowProbe overlapped = probeWindow(config, false, 0, 4096);
            config.runtime.overlap_reduction = false;
            const WindowProbe after = probeWindow(config, false, 0, 4096);
            QVERIFY2(overlapped.buckets >= 4, std::to_string(overlapped.buckets).c_str());
            QCOMPARE(after.overlapped, int64_t(0));
            if (dense) QCOMPARE(overlapped.overlapped, overlapped.buckets);
            else QVERIFY(overlapped.overlapped >= 1);
            QCOMPARE(overlapped.window.collectives, overlapped.buckets + 1);
            QCOMPARE(after.window.collectives, after.buckets + 1);
            QCOMPARE(overlapped.gradients.size(), after.gradients.size());
            for (size_t i = 0; i < after.gradients.size(); ++i)
                QVERIFY(torch::equal(overlapped.gradients[i], after.gradients[i]));
            QCOMPARE(overlapped.window.grad_norm, after.window.grad_norm);
        }
    }

    // Item 6: the schedule counts optimizer steps, whatever K and W; LR(s) = schedule(s).
    void scheduleCountsOptimizerSteps() {
        RunConfig base = tinyConfig();
        base.train.steps = 6;
        base.train.warmup_steps = 2;
        auto expected = [&](int64_t s) {  // independent: the cosine formula written out
            if (s < 2) return base.train.lr * double(s + 1) / 2.0;
            const double progress = double(s - 2) / 4.0;
            return base.train.min_lr + (base.train.lr - base.train.min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
        };
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{4, 1, 1}, {1, 4, 1}, {1, 2, 2}}) {
            const Series s = trainAndCollect(withSplit(base, m, K, W));
            QCOMPARE(s.lr.size(), size_t(6));
            for (int64_t i = 0; i < 6; ++i) QVERIFY(std::fabs(s.lr[i] - expected(i)) < 1e-15);
        }
    }

    // Item 7: the logged norm is the full-batch norm before clipping, and clipping acted on it:
    // with a clip far above the norm the first update differs from one with a tight clip.
    void clippingActsOnceOnTheGlobalNorm() {
        RunConfig tight = withSplit(tinyConfig(), 2, 2, 2);
        tight.train.grad_clip = 1e-3;
        RunConfig loose = tight;
        loose.train.grad_clip = 1e3;
        const Series a = trainAndCollect(tight), b = trainAndCollect(loose);
        QCOMPARE(a.grad_norm.front(), b.grad_norm.front());  // same window, norm measured before clipping
        QVERIFY(a.grad_norm.front() > 1e-3);
        QVERIFY(a.loss[1] != b.loss[1]);  // the clipped update moved the weights differently
    }

    // Stopping W ranks ends the run `stopped` at once, even when one rank had already passed
    // its boundary and waits in a collective for the others (they release it).
    void stoppingSeveralRanksEndsStopped() {
        for (int attempt = 0; attempt < 5; ++attempt) {
            RunConfig config = withSplit(tinyConfig(), 1, 1, 2);
            config.train.steps = 100000;
            config.runtime.comm_timeout_s = 300;
            TrainingSession session(config);
            session.start();
            QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() >= 1 + attempt, 60000);
            session.stop();
            QVERIFY(session.wait(std::chrono::seconds(60)));
            QCOMPARE(session.status(), RunStatus::Stopped);
            QCOMPARE(session.liveThreads(), 0);
        }
    }

    // A failing rank ends the run for every rank, with the reason, and leaves no thread behind.
    void aFailingRankEndsTheRunWithTheReason() {
        RunConfig config = withSplit(tinyConfig(), 1, 2, 2);
        config.train.steps = 1000;
        config.runtime.comm_timeout_s = 30;
        TrainingSession session(config);
        session.injectRankFailure(1, 3);
        session.start();
        QVERIFY(session.wait(std::chrono::seconds(60)));
        QCOMPARE(session.status(), RunStatus::Failed);
        QVERIFY2(session.summary().error.find("injected failure at step 4") != std::string::npos,
                 session.summary().error.c_str());
        QCOMPARE(session.liveThreads(), 0);
    }
};

QTEST_APPLESS_MAIN(TestAccumulation)
#include "test_accumulation.moc"
