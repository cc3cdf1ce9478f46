// runtime.dtype fp8 through the model: runs that track bf16, the conformance splits within a
// measured tolerance (docs/design/fp8.md says why not exact), fp32 gradients, evaluation in the
// run's precision, and the Linears really quantised.
#include <QtTest/QtTest>

#include <array>
#include <cmath>
#include <vector>

#include "cpu_paths_report.h"
#include "conformance_setup.h"
#include "data/evaluate.h"
#include "data/token_source.h"
#include "kernels/compute_scope.h"
#include "kernels/cpu_paths.h"
#include "kernels/product_precision.h"
#include "model/compute_precision.h"
#include "rank_threads.h"
#include "trainbench/config_io.h"
#include "train_and_collect.h"

using namespace trainbench;

namespace {

// The first window's summed gradients on rank 0, divided by its tokens.
std::vector<torch::Tensor> firstWindowGradients(const RunConfig& config) {
    std::vector<torch::Tensor> gradients;
    onRankTrainers(config, RankThreadOptions{}, [&](int r, RankTrainer& trainer) {
        WindowResult window;
        trainer.accumulateWindow(0, window);
        if (r != 0) return;
        for (auto& p : trainer.model()->parameters()) gradients.push_back(p.grad() / double(window.tokens));
    });
    return gradients;
}

}  // namespace

class TestFp8Training : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The tiny conformance model (every Linear kind: LoRA queries, dense MLP, shared and routed
    // experts) under fp8 tracks bf16 within 1 % at every step, and is not bf16.
    void tinyTracksBf16() {
        RunConfig config = withSplit(conformanceConfig(), 2, 2, 2);
        config.train.steps = 8;
        config.runtime.dtype = "bf16";
        const Series bf16 = trainAndCollect(config);
        config.runtime.dtype = "fp8";
        const Series fp8 = trainAndCollect(config);
        QCOMPARE(fp8.loss.size(), bf16.loss.size());
        const auto [worst, differs] = worstDifference(fp8.loss, bf16.loss);
        qInfo("tiny: fp8 against bf16, worst step %.3g", worst);
        QVERIFY2(worst < 1e-2, qPrintable(QString::number(worst)));
        QVERIFY(differs);
    }

    // Splits of one global batch under fp8 (docs/design/fp8.md, section 5, says why these bounds
    // and no others). The first window: the forward's and dgrad's tiles are per token, W's blocks
    // per weight, and wgrad's tiles along the tokens take power-of-two scales, which round E4M3
    // the same way whichever tokens share a tile (outside E4M3's subnormals): the splits' first
    // loss, gradient norm and single gradients agree within fp32's conformance bound (1e-5), on
    // every CPU path. Later steps start from weights that differ in their last bits (the window's
    // fp32 sums run in another order), and quantising turns a last-bit difference on an E4M3
    // rounding boundary into a whole E4M3 step: where a discrete choice meets a near-tie (the
    // MoE's top-k, the sign of the bias update) the curves part by a routing change, which no
    // tolerance bounds. So the later steps are held to 1e-5 with routing that makes no discrete
    // choice (every routed expert active, no bias), and with top-k routing only the first window
    // is. The same split is deterministic, bit for bit.
    void splitsAgreeWithinFp8Tolerance_data() {
        QTest::addColumn<bool>("top_k");
        QTest::newRow("top-2 of 4 experts with the balancing bias: the first window") << true;
        QTest::newRow("every expert active, no bias: every step") << false;
    }
    void splitsAgreeWithinFp8Tolerance() {
        QFETCH(bool, top_k);
        qInfo("CPU paths: %s", kernels::cpuPathsInUse().c_str());
        RunConfig base = conformanceConfig();
        base.runtime.dtype = "fp8";
        if (!top_k) {
            base.model.n_activated_experts = base.model.n_routed_experts;
            base.model.gate_bias = false;
        }
        const Series reference = trainAndCollect(withSplit(base, 8, 1, 1));
        double worst_loss = 0, worst_norm = 0, worst_later = 0;
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{2, 4, 1}, {2, 2, 2}, {1, 4, 2}}) {
            const Series s = trainAndCollect(withSplit(base, m, K, W));
            QCOMPARE(s.loss.size(), reference.loss.size());
            worst_loss = std::max(worst_loss, relativeDifference(s.loss[0], reference.loss[0]));
            worst_norm = std::max(worst_norm, relativeDifference(s.grad_norm[0], reference.grad_norm[0]));
            for (size_t i = 1; i < s.loss.size(); ++i)
                worst_later = std::max({worst_later, relativeDifference(s.loss[i], reference.loss[i]),
                                        relativeDifference(s.grad_norm[i], reference.grad_norm[i])});
        }
        qInfo("fp8 splits, first window: worst loss %.3g, worst grad norm %.3g; later steps: worst loss or norm %.3g%s",
              worst_loss, worst_norm, worst_later, top_k ? " (past a top-k near-tie: not bounded)" : "");
        if (!top_k) QVERIFY2(worst_later < kLaterStepsTolerance, qPrintable(QString::number(worst_later)));
        const auto whole = firstWindowGradients(withSplit(base, 8, 1, 1));
        double scale = 0;
        for (const auto& g : whole) scale = std::max(scale, g.abs().max().item<double>());
        double worst_gradient = 0;
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{2, 4, 1}, {2, 2, 2}, {1, 4, 2}}) {
            const auto split = firstWindowGradients(withSplit(base, m, K, W));
            for (size_t i = 0; i < whole.size(); ++i)
                worst_gradient = std::max(worst_gradient, (split[i] - whole[i]).abs().max().item<double>() / scale);
        }
        qInfo("fp8 splits: worst first-window gradient element %.3g of the largest", worst_gradient);
        QVERIFY2(worst_gradient < kSplitGradientTolerance, qPrintable(QString::number(worst_gradient)));
        QVERIFY2(worst_loss < kSplitLossTolerance, qPrintable(QString::number(worst_loss)));
        QVERIFY2(worst_norm < kSplitNormTolerance, qPrintable(QString::number(worst_norm)));
        const Series again = trainAndCollect(withSplit(base, 2, 2, 2)), once = trainAndCollect(withSplit(base, 2, 2, 2));
        QCOMPARE(again.loss, once.loss);
        QCOMPARE(again.grad_norm, once.grad_norm);
    }

    // Gradients stay fp32 (the master's dtype) and are the quantised products': near fp32's,
    // not equal to them.
    void gradientsAreFp32AndQuantised() {
        RunConfig config = withSplit(conformanceConfig(), 4, 2, 1);
        const auto fp32 = firstWindowGradients(config);
        config.runtime.dtype = "fp8";
        const auto fp8 = firstWindowGradients(config);
        QCOMPARE(fp8.size(), fp32.size());
        double num = 0, den = 0;
        for (size_t i = 0; i < fp8.size(); ++i) {
            QCOMPARE(fp8[i].scalar_type(), torch::kFloat32);
            num += (fp8[i] - fp32[i]).to(torch::kFloat64).pow(2).sum().item<double>();
            den += fp32[i].to(torch::kFloat64).pow(2).sum().item<double>();
        }
        const double error = std::sqrt(num / den);
        qInfo("fp8 gradients against fp32: %.3g", error);
        QVERIFY2(error > 1e-4 && error < 0.1, qPrintable(QString::number(error)));
    }

    // Evaluation follows runtime.dtype (`eval --set runtime.dtype=fp8` is the fp8 forward's loss):
    // near the fp32 loss, not equal to it; the head stays out of fp8, the projections do not.
    void evaluationFollowsTheRunsPrecision() {
        QTemporaryDir dir;
        RunConfig config = raggedTextConfig(writeRaggedCorpus(dir));
        config.train.eval_windows = 4;
        torch::manual_seed(3);
        Transformer model(config.model);
        const auto source = openTokenSource(config);
        const double fp32 = evaluateModel(model, *source, config, torch::kCPU).loss;
        config.runtime.dtype = "fp8";
        QVERIFY(computePrecisionOf(config, model) == ComputePrecision::kFp8);
        const double fp8 = evaluateModel(model, *source, config, torch::kCPU).loss;
        qInfo("eval: fp32 %.6f, fp8 %.6f", fp32, fp8);
        QVERIFY(fp8 != fp32);
        QVERIFY2(relativeDifference(fp8, fp32) < 1e-2, qPrintable(QString("%1 vs %2").arg(fp8).arg(fp32)));
        // A model held in fp64 (the reference runs) never computes in fp8.
        Transformer wide(config.model);
        wide->to(torch::kFloat64);
        QVERIFY(computePrecisionOf(config, wide) == ComputePrecision::kFp32);
    }

private:
    // fp32's conformance bound (docs/design/accumulation.md), not a wider one for fp8: where no
    // discrete choice meets a tie, every quantised operand is the same bits under every split
    // (per-token tiles, per-weight blocks, power-of-two token tiles), so what differs is what
    // differs at fp32, the order of the window's sums (measured: losses 4.4e-8, single gradient
    // elements 4.7e-7 of the largest). Past a top-k near-tie there is no bound to state: the
    // curves follow different routings (measured with ATen's AVX2 kernels: 4.7e-4 at step 3).
    static constexpr double kSplitLossTolerance = 1e-5;
    static constexpr double kSplitNormTolerance = 1e-5;
    static constexpr double kSplitGradientTolerance = 1e-5;
    // After the first update the splits' weights differ by at most fp32's bound, delta = 1e-5
    // relative. An operand element moved by delta crosses an E4M3 rounding boundary with
    // probability at most delta / 2^-5 (E4M3's relative half spacing is at least 2^-5: 3
    // mantissa bits), and then moves by one step, at most 2^-3 of itself; a loss or a norm over
    // many such elements moves by about sqrt(p) 2^-3 = 2^-3 sqrt(2^5 delta) = 2.2e-3. Measured:
    // losses 1.1e-7, gradient norms 5.9e-5 (AVX-512 and AVX2), 2.1e-6 (ATen's default build).
    static inline const double kLaterStepsTolerance = 0.125 * std::sqrt(32 * kSplitLossTolerance);
};

QTEST_APPLESS_MAIN(TestFp8Training)
#include "test_fp8_training.moc"
