// Model suite: parameter counts vs instantiated tensors, names, fp64 gradients, causality,
// router cases computed by hand, YaRN constants, balance loss and the bias update rule, the
// hand-written RMSNorm backward, the fused AdamW step against the update written out, and the
// output head in chunks (its row kernel, the operation and the model against the whole logits).
#include <QScopeGuard>
#include <QtTest/QtTest>

#include <cmath>

#include "cpu_paths_report.h"
#include "kernels/cpu_kernels.h"
#include "kernels/softmax_cross_entropy.h"
#include "kernels/vector_math.h"
#include "model/chunked_head_loss.h"
#include "model/gate.h"
#include "model/moe.h"
#include "model/rms_norm.h"
#include "model/rotary.h"
#include "model/transformer.h"
#include "tiny_model.h"
#include "parallel/fused_adamw.h"
#include "trainbench/param_count.h"

using namespace trainbench;

namespace {

ModelConfig tinyModel() {
    ModelConfig c = tinyTestModel(24, 16);
    c.init_std = 0.2;
    return c;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// A gate whose logits for the input x = [1, 0] are exactly `logits`.
Gate gateWithLogits(ModelConfig c, const std::vector<double>& logits) {
    c.dim = 2;
    c.n_routed_experts = static_cast<int64_t>(logits.size());
    Gate gate(c);
    torch::NoGradGuard no_grad;
    gate->weight.zero_();
    for (size_t e = 0; e < logits.size(); ++e) gate->weight[e][0] = logits[e];
    gate->to(torch::kFloat64);
    return gate;
}

torch::Tensor unitInput() { return torch::tensor({{1.0, 0.0}}, torch::kFloat64); }

// Two rotary pairs (frequencies 1 and 1/100), no YaRN.
ModelConfig fourChannelRotary() {
    ModelConfig c;
    c.max_seq_len = 16;
    c.original_seq_len = 4096;
    c.qk_rope_head_dim = 4;
    return c;
}

}  // namespace

class TestModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parameterCountMatchesInstantiatedTensors_data() {
        QTest::addColumn<int>("q_lora_rank");
        QTest::addColumn<bool>("gate_bias");
        QTest::addColumn<int>("groups");
        QTest::addColumn<int>("shared");
        QTest::newRow("q_lora, bias, groups") << 8 << true << 2 << 1;
        QTest::newRow("full-rank q, no bias") << 0 << false << 1 << 2;
        QTest::newRow("full-rank q, bias, groups") << 0 << true << 4 << 1;
        QTest::newRow("q_lora, no bias, no shared") << 8 << false << 1 << 0;
    }
    void parameterCountMatchesInstantiatedTensors() {
        QFETCH(int, q_lora_rank);
        QFETCH(bool, gate_bias);
        QFETCH(int, groups);
        QFETCH(int, shared);
        ModelConfig c = tinyModel();
        c.q_lora_rank = q_lora_rank;
        c.gate_bias = gate_bias;
        c.n_expert_groups = groups;
        c.n_limited_groups = 1;
        c.n_shared_experts = shared;
        c.n_layers = 3;
        Transformer model(c);
        int64_t numel = 0, tensors = 0;
        for (const auto& [name, tensor] : stateDict(model)) {
            numel += tensor.numel();
            ++tensors;
        }
        ParamCount count = countParameters(c);
        QCOMPARE(count.total, numel);
        QCOMPARE(count.state_dict_tensors, tensors);
        // Activated: total minus the (E - k) routed experts per MoE layer that one token skips.
        QCOMPARE(count.activated, numel - 2 * (c.n_routed_experts - c.n_activated_experts) * 3 * c.dim * c.moe_inter_dim);
    }

    void stateDictUsesReferenceNames() {
        ModelConfig c = tinyModel();
        Transformer model(c);
        std::map<std::string, std::vector<int64_t>> shapes;
        for (const auto& [name, tensor] : stateDict(model)) shapes[name] = tensor.sizes().vec();
        const int64_t qk = c.qkHeadDim(), h = c.n_heads;
        QVERIFY((shapes["embed.weight"] == std::vector<int64_t>{c.vocab_size, c.dim}));
        QVERIFY((shapes["layers.0.attn.wq_a.weight"] == std::vector<int64_t>{c.q_lora_rank, c.dim}));
        QVERIFY((shapes["layers.0.attn.q_norm.weight"] == std::vector<int64_t>{c.q_lora_rank}));
        QVERIFY((shapes["layers.0.attn.wq_b.weight"] == std::vector<int64_t>{h * qk, c.q_lora_rank}));
        QVERIFY((shapes["layers.0.attn.wkv_a.weight"] == std::vector<int64_t>{c.kv_lora_rank + c.qk_rope_head_dim, c.dim}));
        QVERIFY((shapes["layers.0.attn.wkv_b.weight"] ==
                 std::vector<int64_t>{h * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank}));
        QVERIFY((shapes["layers.0.attn.wo.weight"] == std::vector<int64_t>{c.dim, h * c.v_head_dim}));
        QVERIFY((shapes["layers.0.ffn.w1.weight"] == std::vector<int64_t>{c.inter_dim, c.dim}));
        QVERIFY((shapes["layers.1.ffn.gate.weight"] == std::vector<int64_t>{c.n_routed_experts, c.dim}));
        QVERIFY((shapes["layers.1.ffn.gate.bias"] == std::vector<int64_t>{c.n_routed_experts}));
        QVERIFY((shapes["layers.1.ffn.experts.3.w2.weight"] == std::vector<int64_t>{c.dim, c.moe_inter_dim}));
        QVERIFY((shapes["layers.1.ffn.shared_experts.w3.weight"] == std::vector<int64_t>{c.moe_inter_dim, c.dim}));
        QVERIFY((shapes["layers.1.attn_norm.weight"] == std::vector<int64_t>{c.dim}));
        QVERIFY((shapes["norm.weight"] == std::vector<int64_t>{c.dim}));
        QVERIFY((shapes["head.weight"] == std::vector<int64_t>{c.vocab_size, c.dim}));
    }

    void initialisationIsDeterministicAndFollowsTheReference() {
        ModelConfig c = tinyModel();
        Transformer a(c), b(c);
        initializeWeights(a, 7);
        initializeWeights(b, 7);
        auto sa = stateDict(a), sb = stateDict(b);
        for (size_t i = 0; i < sa.size(); ++i) QVERIFY(torch::equal(sa[i].second, sb[i].second));
        auto named = a->named_parameters();
        QVERIFY(torch::all(named["norm.weight"] == 1).item<bool>());
        auto w = named["layers.0.attn.wo.weight"];
        QVERIFY(std::fabs(w.std().item<double>() - c.init_std) < 0.25 * c.init_std);
        for (const auto& buffer : a->named_buffers()) QVERIFY(torch::all(buffer.value() == 0).item<bool>());
    }

    void finiteDifferenceGradientOfWholeModelInFp64() {
        ModelConfig c = tinyModel();
        c.seq_aux_loss_alpha = 0.01;  // the balance loss is part of the objective; check it too
        Transformer model(c);
        initializeWeights(model, 3);
        model->to(torch::kFloat64);
        torch::manual_seed(0);
        auto tokens = torch::randint(0, c.vocab_size, {2, 7}, torch::kInt64);
        auto targets = torch::randint(0, c.vocab_size, {2, 7}, torch::kInt64);
        targets[1][6] = kIgnoreIndex;
        auto objective = [&] {
            auto parts = model->loss(tokens, targets);
            return parts.token_loss_sum + parts.aux_loss_sum;
        };
        objective().backward();
        int checked = 0;
        for (auto& item : model->named_parameters()) {
            auto p = item.value();
            auto grad = p.grad().clone();
            auto flat = p.view({-1});
            for (int64_t i : {int64_t(0), p.numel() / 2, p.numel() - 1}) {
                torch::NoGradGuard no_grad;
                const double original = flat[i].item<double>(), eps = 1e-6;
                flat[i] = original + eps;
                const double up = objective().item<double>();
                flat[i] = original - eps;
                const double down = objective().item<double>();
                flat[i] = original;
                const double numeric = (up - down) / (2 * eps);
                const double analytic = grad.view({-1})[i].item<double>();
                const double tolerance = 1e-6 * std::max(1.0, std::fabs(numeric));
                QVERIFY2(std::fabs(numeric - analytic) < tolerance,
                         qPrintable(QString("%1[%2]: numeric %3 analytic %4")
                                        .arg(QString::fromStdString(item.key())).arg(i).arg(numeric).arg(analytic)));
                ++checked;
            }
        }
        QVERIFY(checked > 60);
    }

    // The chunked head against the whole one (torch's cross-entropy over the whole logits, summed,
    // ignore_index -1): loss, dL/dx and dL/dW at chunks of 1, 8 (a short last chunk) and all rows;
    // within 1e-6 relative in fp32 (another summation order: the log-sum-exp by chunk, dL/dW
    // added chunk by chunk), 1e-12 in fp64; an incoming gradient of 3.5 scales all three.
    void chunkedHeadLossMatchesTheWholeHead() {
        for (const auto dtype : {torch::kFloat32, torch::kFloat64}) {
            torch::manual_seed(11);
            const int64_t N = 37, d = 16, V = 50;
            const auto x0 = torch::randn({N, d}, torch::TensorOptions().dtype(dtype));
            const auto w0 = torch::randn({V, d}, torch::TensorOptions().dtype(dtype)) * 0.3;
            auto targets = torch::randint(0, V, {N}, torch::kInt64);
            targets.index_put_({torch::tensor({0, 5, 6, 36})}, kIgnoreIndex);  // masked rows, the last one too
            auto whole_x = x0.clone().requires_grad_(), whole_w = w0.clone().requires_grad_();
            const auto whole = torch::nn::functional::cross_entropy(
                whole_x.matmul(whole_w.t()), targets,
                torch::nn::functional::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex).reduction(torch::kSum));
            (whole * 3.5).backward();
            const double tolerance = dtype == torch::kFloat64 ? 1e-12 : 1e-6;
            auto close = [&](const torch::Tensor& got, const torch::Tensor& expected) {
                return (got - expected).abs().max().item<double>() <= tolerance * expected.abs().max().item<double>();
            };
            // With the CPU kernels (the fused rows) and without them: torch's ops per chunk, the
            // path a GPU takes.
            const bool enabled = kernels::cpuKernelsEnabled();
            for (const bool with_kernels : {true, false})
            for (int64_t chunk : {int64_t(1), int64_t(8), N}) {
                kernels::setCpuKernelsEnabled(with_kernels);
                const auto restore = qScopeGuard([enabled] { kernels::setCpuKernelsEnabled(enabled); });
                auto x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
                const auto loss = chunkedHeadLoss(x, w, targets, kIgnoreIndex, chunk);
                QVERIFY2(close(loss, whole), qPrintable(QString("chunk %1, kernels %4: loss %2 vs %3").arg(chunk)
                                                            .arg(loss.item<double>(), 0, 'g', 17)
                                                            .arg(whole.item<double>(), 0, 'g', 17).arg(with_kernels)));
                (loss * 3.5).backward();
                QVERIFY2(close(x.grad(), whole_x.grad()), qPrintable(QString("chunk %1: dL/dx").arg(chunk)));
                QVERIFY2(close(w.grad(), whole_w.grad()), qPrintable(QString("chunk %1: dL/dW").arg(chunk)));
                QCOMPARE(x.grad().scalar_type(), dtype);
                QCOMPARE(w.grad().scalar_type(), dtype);
                // The masked rows take no gradient at all.
                QCOMPARE(x.grad()[5].abs().max().item<double>(), 0.0);
            }
        }
    }

    // The model's loss through the chunked head against the whole logits (runtime.head_chunk_tokens
    // 0), with masked targets, in fp32 and under the bf16 and fp8 scopes (the head stays out of
    // fp8 either way): the loss sums and every parameter's gradient (the head's weight, and
    // through dL/dx the final norm, the blocks and the embedding) within 1e-6 of the largest in
    // fp32, 1e-3 in bf16 (where a probability that differs in its last fp32 bit may round to
    // another bf16 value before its product) and 1e-2 in fp8 (where a gradient a bit apart may
    // quantise to another E4M3 value in a block's backward: 1.9e-3 seen); the final norm's and
    // the head's own within 1e-6 in all three; chunks of 1, 7 (a short last one) and the rule's.
    void theChunkedHeadGivesTheModelsLossAndGradients() {
        ModelConfig c = tinyModel();
        torch::manual_seed(23);
        auto tokens = torch::randint(0, c.vocab_size, {2, 12}, torch::kInt64);
        auto targets = torch::randint(0, c.vocab_size, {2, 12}, torch::kInt64);
        for (int64_t t : {0, 3, 4, 11}) targets[0][t] = kIgnoreIndex;
        targets[1][0] = kIgnoreIndex;
        struct Result {
            double loss, aux;
            int64_t count;
            std::vector<torch::Tensor> grads;
        };
        auto run = [&](std::optional<int64_t> chunk, ComputePrecision precision) {
            Transformer model(c);
            initializeWeights(model, 3);
            model->setHeadChunkTokens(chunk);
            LossParts parts = [&] {
                ComputeScope scope(torch::kCPU, precision);
                return model->loss(tokens, targets);
            }();
            (parts.token_loss_sum + parts.aux_loss_sum).backward();
            Result r{parts.token_loss_sum.item<double>(), parts.aux_loss_sum.item<double>(),
                     parts.token_count.item<int64_t>(), {}};
            for (const auto& p : model->parameters()) r.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
            return r;
        };
        for (const auto precision : {ComputePrecision::kFp32, ComputePrecision::kBf16, ComputePrecision::kFp8}) {
            const double tolerance = precision == ComputePrecision::kFp32   ? 1e-6
                                     : precision == ComputePrecision::kBf16 ? 1e-3
                                                                            : 1e-2;
            const Result whole = run(int64_t(0), precision);
            QCOMPARE(whole.count, int64_t(19));  // 24 targets, 5 masked
            double scale = 0;
            for (const auto& g : whole.grads) scale = std::max(scale, g.abs().max().item<double>());
            for (const std::optional<int64_t> chunk : {std::optional<int64_t>(1), std::optional<int64_t>(7), std::optional<int64_t>()}) {
                const Result chunked = run(chunk, precision);
                const QString label = QString("precision %1, chunk %2").arg(int(precision)).arg(chunk ? *chunk : -1);
                QCOMPARE(chunked.count, whole.count);
                QVERIFY2(std::fabs(chunked.loss - whole.loss) <= tolerance * std::fabs(whole.loss),
                         qPrintable(QString("%1: loss %2 vs %3").arg(label).arg(chunked.loss, 0, 'g', 12).arg(whole.loss, 0, 'g', 12)));
                QCOMPARE(chunked.aux, whole.aux);  // the blocks' balance loss: not the head's
                for (size_t i = 0; i < whole.grads.size(); ++i) {
                    const double error = (chunked.grads[i] - whole.grads[i]).abs().max().item<double>() / scale;
                    // (the final norm and the head, the last two, at 1e-6 in every precision)
                    const double allowed = i + 2 >= whole.grads.size() ? 1e-6 : tolerance;
                    QVERIFY2(error <= allowed, qPrintable(QString("%1: parameter %2 off by %3").arg(label).arg(i).arg(error)));
                }
            }
        }
    }

    // The head's rows (softmax, loss and gradient in place) against torch's fp64 log-softmax:
    // losses and dL/dlogits within 1e-6 in fp32 (the loops' exp: about 1 ulp), 1e-12 in fp64;
    // ignored rows zero; every vector variant this CPU has gives the same bits; a vocabulary
    // of 37 (a vector's tail); a target outside the vocabulary is named.
    void softmaxCrossEntropyRowsAreTheLogSoftmaxs() {
        torch::manual_seed(5);
        const int64_t n = 9, V = 37;
        const auto logits = torch::randn({n, V}, torch::kFloat64) * 4;
        auto targets = torch::randint(0, V, {n}, torch::kInt64);
        targets[2] = -1;
        targets[8] = -1;
        const auto counted = targets.ne(-1);
        const auto log_p = torch::log_softmax(logits, 1);
        const auto want_loss = -log_p.gather(1, targets.clamp_min(0).unsqueeze(1)).squeeze(1) * counted;
        const auto want_grad = (log_p.exp() - torch::one_hot(targets.clamp_min(0), V).to(torch::kFloat64)) *
                               counted.unsqueeze(1);
        for (const auto dtype : {torch::kFloat32, torch::kFloat64}) {
            const double tolerance = dtype == torch::kFloat64 ? 1e-12 : 1e-6;
            torch::Tensor first;
            for (kernels::VectorIsa isa : {kernels::VectorIsa::Baseline, kernels::VectorIsa::Avx2, kernels::VectorIsa::Avx512}) {
                if (!kernels::cpuSupports(isa)) continue;
                kernels::setVectorIsa(isa);
                auto rows = logits.to(dtype).clone();
                const auto losses = kernels::softmaxCrossEntropyInPlace(rows, targets, -1);
                const double loss_error = (losses.to(torch::kFloat64) - want_loss).abs().max().item<double>();
                const double grad_error = (rows.to(torch::kFloat64) - want_grad).abs().max().item<double>();
                QVERIFY2(loss_error < tolerance * 10, qPrintable(QString("loss off by %1").arg(loss_error)));
                QVERIFY2(grad_error < tolerance, qPrintable(QString("gradient off by %1").arg(grad_error)));
                QCOMPARE(rows[2].abs().max().item<double>(), 0.0);
                QCOMPARE(losses[8].item<double>(), 0.0);
                if (!first.defined()) first = rows.clone();
                QVERIFY(torch::equal(rows, first));
            }
            kernels::setVectorIsa(std::nullopt);
        }
        auto rows = logits.to(torch::kFloat32).contiguous();
        auto bad = targets.clone();
        bad[4] = V;
        try {
            kernels::softmaxCrossEntropyInPlace(rows, bad, -1);
            QFAIL("a target outside the vocabulary was taken");
        } catch (const std::out_of_range& e) {
            QVERIFY2(QString(e.what()).contains("target 37 outside the vocabulary [0, 37)"), e.what());
        }
    }

    void lossReturnsSumAndCountOfCountedTargets() {
        ModelConfig c = tinyModel();
        c.seq_aux_loss_alpha = 0;
        Transformer model(c);
        initializeWeights(model, 1);
        model->to(torch::kFloat64);
        auto tokens = torch::randint(0, c.vocab_size, {2, 5}, torch::kInt64);
        auto targets = torch::randint(0, c.vocab_size, {2, 5}, torch::kInt64);
        targets[0][4] = kIgnoreIndex;
        targets[1][0] = kIgnoreIndex;
        targets[1][1] = kIgnoreIndex;
        auto parts = model->loss(tokens, targets);
        QCOMPARE(parts.token_count.item<int64_t>(), int64_t(7));  // 10 targets, 3 ignored, by hand
        // Independent recomputation: -log softmax of the logits at each counted target, in fp64.
        auto logp = torch::log_softmax(model->forward(tokens), -1);
        double expected = 0;
        for (int b = 0; b < 2; ++b)
            for (int t = 0; t < 5; ++t) {
                int64_t y = targets[b][t].item<int64_t>();
                if (y != kIgnoreIndex) expected -= logp[b][t][y].item<double>();
            }
        QVERIFY(std::fabs(parts.token_loss_sum.item<double>() - expected) < 1e-10);
    }

    void changingATokenChangesNoEarlierLogit() {
        ModelConfig c = tinyModel();
        Transformer model(c);
        initializeWeights(model, 5);
        model->eval();
        torch::NoGradGuard no_grad;
        auto tokens = torch::randint(0, c.vocab_size, {1, 12}, torch::kInt64);
        auto before = model->forward(tokens);
        auto changed = tokens.clone();
        const int64_t t = 6;
        changed[0][t] = (tokens[0][t].item<int64_t>() + 1) % c.vocab_size;
        auto after = model->forward(changed);
        QVERIFY(torch::allclose(before.slice(1, 0, t), after.slice(1, 0, t), 0, 1e-6));
        QVERIFY((before.slice(1, t) - after.slice(1, t)).abs().max().item<double>() > 1e-4);
    }

    void softmaxRouterDoesNotRenormalise() {
        ModelConfig c;
        c.score_func = "softmax";
        c.n_activated_experts = 2;
        c.route_scale = 1.5;
        c.gate_bias = false;
        Gate gate = gateWithLogits(c, {1.0, 2.0, 3.0, 0.5});
        Routing r = gate(unitInput());
        const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(0.5);
        QCOMPARE(r.indices[0][0].item<int64_t>(), int64_t(2));
        QCOMPARE(r.indices[0][1].item<int64_t>(), int64_t(1));
        QVERIFY(std::fabs(r.weights[0][0].item<double>() - 1.5 * std::exp(3.0) / z) < 1e-12);
        QVERIFY(std::fabs(r.weights[0][1].item<double>() - 1.5 * std::exp(2.0) / z) < 1e-12);
    }

    void sigmoidRouterRenormalisesThenScales() {
        ModelConfig c;
        c.score_func = "sigmoid";
        c.n_activated_experts = 2;
        c.route_scale = 2.5;
        c.gate_bias = false;
        Gate gate = gateWithLogits(c, {1.0, 2.0, 3.0, 0.5});
        Routing r = gate(unitInput());
        const double s2 = sigmoid(3.0), s1 = sigmoid(2.0);
        QVERIFY(std::fabs(r.weights[0][0].item<double>() - 2.5 * s2 / (s1 + s2)) < 1e-12);
        QVERIFY(std::fabs(r.weights[0][1].item<double>() - 2.5 * s1 / (s1 + s2)) < 1e-12);
    }

    void groupLimitingUsesMaxWithoutBiasAndTopTwoSumWithBias() {
        // Groups {0,1} and {2,3}; one group allowed. Max rule: group 1 (sigmoid 3.5 beats 3.0).
        // Top-2-sum rule: group 0 (sig 3 + sig 2.9 = 1.90 beats sig 0 + sig 3.5 = 1.47).
        ModelConfig c;
        c.score_func = "sigmoid";
        c.n_activated_experts = 2;
        c.n_expert_groups = 2;
        c.n_limited_groups = 1;
        c.gate_bias = false;
        Routing max_rule = gateWithLogits(c, {3.0, 2.9, 0.0, 3.5})(unitInput());
        std::set<int64_t> chosen{max_rule.indices[0][0].item<int64_t>(), max_rule.indices[0][1].item<int64_t>()};
        QCOMPARE(chosen, (std::set<int64_t>{2, 3}));
        c.gate_bias = true;
        Routing sum_rule = gateWithLogits(c, {3.0, 2.9, 0.0, 3.5})(unitInput());
        chosen = {sum_rule.indices[0][0].item<int64_t>(), sum_rule.indices[0][1].item<int64_t>()};
        QCOMPARE(chosen, (std::set<int64_t>{0, 1}));
    }

    void biasChangesTheChoiceButNotTheWeights() {
        ModelConfig c;
        c.score_func = "softmax";
        c.n_activated_experts = 2;
        c.gate_bias = true;
        Gate gate = gateWithLogits(c, {1.0, 2.0, 3.0, 0.5});
        {
            torch::NoGradGuard no_grad;
            gate->bias.copy_(torch::tensor({0.0, 0.0, -10.0, 5.0}));
        }
        Routing r = gate(unitInput());
        const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(0.5);
        QCOMPARE(r.indices[0][0].item<int64_t>(), int64_t(3));
        QCOMPARE(r.indices[0][1].item<int64_t>(), int64_t(1));
        QVERIFY(std::fabs(r.weights[0][0].item<double>() - std::exp(0.5) / z) < 1e-12);
        QVERIFY(std::fabs(r.weights[0][1].item<double>() - std::exp(2.0) / z) < 1e-12);
    }

    void yarnConstantsOfTheDefaults() {
        ModelConfig c;  // defaults: max_seq_len 16384 > original_seq_len 4096, so YaRN is on
        auto [low, high] = yarnCorrectionRange(c);
        QCOMPARE(low, 10.0);
        QCOMPARE(high, 23.0);
        const double base = 1.0 / std::sqrt(192.0);
        QVERIFY(std::fabs(attentionSoftmaxScale(c) / base - 1.8738542) < 1e-6);
        c.mscale = 0.707;
        QVERIFY(std::fabs(attentionSoftmaxScale(c) / base - 1.5896262) < 1e-6);
        // Frequencies: unchanged below `low`, divided by rope_factor above `high`.
        auto freqs = rotaryFrequencies(c);
        QVERIFY(std::fabs(freqs[0] - 1.0) < 1e-15);
        const double plain31 = 1.0 / std::pow(10000.0, 62.0 / 64.0);
        QVERIFY(std::fabs(freqs[31] - plain31 / 40.0) < 1e-18);
    }

    void noYarnWithinTheOriginalContext() {
        ModelConfig c;
        c.max_seq_len = 4096;
        QCOMPARE(attentionSoftmaxScale(c), 1.0 / std::sqrt(192.0));
        auto freqs = rotaryFrequencies(c);
        for (int j = 0; j < 32; ++j) QVERIFY(std::fabs(freqs[j] - 1.0 / std::pow(10000.0, 2.0 * j / 64.0)) < 1e-15);
    }

    void rotaryRotatesAdjacentPairs() {
        RotaryTable rotary(fourChannelRotary());
        auto x = torch::tensor({1.0, 2.0, 3.0, 4.0}, torch::kFloat64).view({1, 1, 1, 4}).expand({1, 3, 1, 4}).contiguous();
        auto y = rotary.apply(x);
        // Position 2, pair 0 (freq 1): (1, 2) rotated by 2 rad; pair 1 (freq 1/100): (3, 4) by 0.02 rad.
        QVERIFY(std::fabs(y[0][2][0][0].item<double>() - (std::cos(2.0) - 2 * std::sin(2.0))) < 1e-12);
        QVERIFY(std::fabs(y[0][2][0][1].item<double>() - (std::sin(2.0) + 2 * std::cos(2.0))) < 1e-12);
        QVERIFY(std::fabs(y[0][2][0][2].item<double>() - (3 * std::cos(0.02) - 4 * std::sin(0.02))) < 1e-12);
        QVERIFY(torch::allclose(y[0][0], x[0][0]));
    }

    void rotaryPassesTheFirstChannelsThrough() {
        RotaryTable rotary(fourChannelRotary());
        auto x = torch::arange(1.0, 19.0, torch::kFloat64).view({1, 3, 1, 6});
        auto y = rotary.apply(x, /*skip=*/2);
        QVERIFY(torch::equal(y.slice(-1, 0, 2), x.slice(-1, 0, 2)));
        QVERIFY(torch::allclose(y.slice(-1, 2), rotary.apply(x.slice(-1, 2).contiguous()), 0, 1e-15));
        // Position 1, first rotated pair (freq 1): (9, 10) rotated by 1 rad.
        QVERIFY(std::fabs(y[0][1][0][2].item<double>() - (9 * std::cos(1.0) - 10 * std::sin(1.0))) < 1e-12);
        // A channel slice with odd strides is rotated too (copied first).
        auto wide = torch::arange(1.0, 22.0, torch::kFloat64).view({1, 3, 1, 7});
        auto tail = rotary.apply(wide.slice(-1, 3));
        QVERIFY(torch::allclose(tail, rotary.apply(wide.slice(-1, 3).contiguous()), 0, 1e-15));
    }

    void rmsNormBackwardMatchesTheComposedForm() {
        torch::manual_seed(3);
        RMSNorm norm(8);
        norm->to(torch::kFloat64);
        {
            torch::NoGradGuard no_grad;
            norm->weight.copy_(torch::randn({8}, torch::kFloat64));
        }
        auto x = torch::randn({3, 5, 8}, torch::kFloat64).requires_grad_(true);
        auto g = torch::randn({3, 5, 8}, torch::kFloat64);
        auto y = norm(x);
        auto grads = torch::autograd::grad({y}, {x, norm->weight}, {g});
        // The same maths composed of differentiable operations, its gradients from autograd.
        auto x2 = x.detach().clone().requires_grad_(true);
        auto w2 = norm->weight.detach().clone().requires_grad_(true);
        auto y2 = x2 * torch::rsqrt(x2.pow(2).mean(-1, true) + 1e-6) * w2;
        auto expected = torch::autograd::grad({y2}, {x2, w2}, {g});
        QVERIFY(torch::allclose(y, y2, 0, 1e-14));
        QVERIFY(torch::allclose(grads[0], expected[0], 0, 1e-13));
        QVERIFY(torch::allclose(grads[1], expected[1], 0, 1e-13));
    }

    void fusedAdamWStepFollowsTheUpdateWrittenOut() {
        // Two groups (decayed and not), three steps, fp64; the expected values follow the AdamW
        // update element by element in plain doubles.
        const double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
        auto decayed = torch::tensor({0.5, -1.0, 2.0}, torch::kFloat64).requires_grad_(true);
        auto plain = torch::tensor({0.25, 3.0}, torch::kFloat64).requires_grad_(true);
        auto options = torch::optim::AdamWOptions(lr).betas({b1, b2}).eps(eps);
        std::vector<torch::optim::OptimizerParamGroup> groups;
        groups.emplace_back(std::vector<torch::Tensor>{decayed},
                            std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(wd)));
        groups.emplace_back(std::vector<torch::Tensor>{plain},
                            std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(0.0)));
        torch::optim::AdamW optimizer(std::move(groups), options);

        std::vector<double> p = {0.5, -1.0, 2.0, 0.25, 3.0}, m(5, 0.0), v(5, 0.0);
        const std::vector<std::vector<double>> step_grads = {
            {0.1, -0.2, 0.3, 1.0, -2.0}, {-0.4, 0.5, 0.0, 0.5, 0.25}, {0.2, 0.2, -0.1, -1.5, 0.75}};
        // The third step clips: its gradients are divided by 4 (exact in fp32) on the way in.
        const std::vector<double> divisors = {1.0, 1.0, 4.0};
        for (size_t t = 1; t <= step_grads.size(); ++t) {
            auto g = step_grads[t - 1];
            decayed.mutable_grad() = torch::tensor({g[0], g[1], g[2]}, torch::kFloat64);
            plain.mutable_grad() = torch::tensor({g[3], g[4]}, torch::kFloat64);
            fusedAdamWStep(optimizer, divisors[t - 1]);
            for (auto& value : g) value /= divisors[t - 1];
            for (size_t i = 0; i < 5; ++i) {
                const double decay = i < 3 ? wd : 0.0;
                p[i] *= 1 - lr * decay;
                m[i] = b1 * m[i] + (1 - b1) * g[i];
                v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
                const double m_hat = m[i] / (1 - std::pow(b1, double(t)));
                const double v_hat = v[i] / (1 - std::pow(b2, double(t)));
                p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
            }
        }
        for (size_t i = 0; i < 5; ++i) {
            const double got = i < 3 ? decayed[int64_t(i)].item<double>() : plain[int64_t(i) - 3].item<double>();
            QVERIFY2(std::fabs(got - p[i]) < 1e-12, qPrintable(QString("element %1: %2 vs %3").arg(i).arg(got).arg(p[i])));
        }
        // The moments and counts stay in the optimizer's own state (what checkpoints save).
        auto& state = static_cast<torch::optim::AdamWParamState&>(*optimizer.state().at(decayed.unsafeGetTensorImpl()));
        QCOMPARE(state.step(), int64_t(3));
        QVERIFY(std::fabs(state.exp_avg()[1].item<double>() - m[1]) < 1e-15);
        QVERIFY(std::fabs(state.exp_avg_sq()[1].item<double>() - v[1]) < 1e-15);
        QVERIFY(std::fabs(decayed.grad()[1].item<double>() - 0.2 / 4.0) < 1e-15);  // stored clipped
    }

    void sequenceBalanceLossByHand() {
        // E = 2, k = 1, softmax, one sequence of two tokens that both pick expert 0:
        // f = (E/(kT)) * counts = (2, 0); P_0 = mean of softmax scores = (sig(2) + sig(4)) / 2.
        ModelConfig c;
        c.dim = 1;
        c.moe_inter_dim = 2;
        c.n_routed_experts = 2;
        c.n_activated_experts = 1;
        c.n_shared_experts = 0;
        c.score_func = "softmax";
        c.gate_bias = false;
        c.seq_aux_loss_alpha = 0.1;
        MoE moe(c);
        moe->to(torch::kFloat64);
        {
            torch::NoGradGuard no_grad;
            moe->gate->weight.copy_(torch::tensor({{1.0}, {-1.0}}, torch::kFloat64));
        }
        auto out = moe->forward(torch::tensor({1.0, 2.0}, torch::kFloat64).view({1, 2, 1}));
        const double expected = 0.1 * 2.0 * (sigmoid(2.0) + sigmoid(4.0)) / 2.0;
        QVERIFY(std::fabs(out.seq_aux[0].item<double>() - expected) < 1e-12);
        auto load = moe->takeLoad();
        QCOMPARE(load[0].item<int64_t>(), int64_t(2));
        QCOMPARE(load[1].item<int64_t>(), int64_t(0));
    }

    void biasUpdateFollowsTheSignOfMeanMinusLoad() {
        ModelConfig c = tinyModel();
        MoE moe(c);
        moe->updateBias(torch::tensor({4, 0, 2, 2}, torch::kInt64), 0.001);
        auto bias = moe->gate->bias;
        QVERIFY(std::fabs(bias[0].item<double>() + 0.001) < 1e-9);
        QVERIFY(std::fabs(bias[1].item<double>() - 0.001) < 1e-9);
        QCOMPARE(bias[2].item<double>(), 0.0);
        QCOMPARE(bias[3].item<double>(), 0.0);
    }
};

QTEST_APPLESS_MAIN(TestModel)
#include "test_model.moc"
