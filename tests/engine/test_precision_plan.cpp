// The planner under runtime.dtype fp8 and runtime.optimizer_dtype bf16: the fp8 terms counted by
// hand from configs/tiny.json's dims (docs/design/fp8.md section 4, the table at the top of
// engine/plan/activation_bytes.cpp) and against what the engine's blocks keep and hold in their
// backward (the tracking allocator), bf16 moments in every tier, and planPrecisions' four plans.
#include <QtTest/QtTest>

#include <cmath>

#include <nlohmann/json.hpp>

#include "kernels/compute_scope.h"
#include "kernels/cpu_kernels.h"
#include "kernels/fp8_blocks.h"
#include "kernels/fp8_gated_mlp.h"
#include "kernels/fp8_linear.h"
#include "memory/memory_account.h"
#include "model/transformer.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/param_count.h"

using namespace trainbench;

namespace {

RunConfig preset(const std::string& name, const std::string& device = "cpu") {
    RunConfig c = loadRunConfigFile(std::string(TRAINBENCH_SOURCE_DIR) + "/configs/" + name);
    c.runtime.device = device;
    return c;
}

RunConfig withDtype(RunConfig c, const std::string& dtype, const std::string& moments = "fp32") {
    c.runtime.dtype = dtype;
    c.runtime.optimizer_dtype = moments;
    return c;
}

// One row of n features in fp8, by its definition: a byte per element, four per 128 (or fewer).
int64_t fp8Row(int64_t n) { return n + 4 * ((n + 127) / 128); }

// Restores the CPU kernels' switch when a test turns it.
struct KernelsSwitch {
    bool before = kernels::cpuKernelsEnabled();
    explicit KernelsSwitch(bool on) { kernels::setCpuKernelsEnabled(on); }
    ~KernelsSwitch() { kernels::setCpuKernelsEnabled(before); }
};

// A block whose matrices (the gate's too) are drawn as the reference draws them, norms at one:
// finite products all the way (an fp8 node refuses a NaN).
Block initialised(int64_t layer, const ModelConfig& model) {
    Block block(layer, model);
    torch::NoGradGuard no_grad;
    for (auto& p : block->parameters())
        if (p.dim() == 2) p.normal_(0.0, model.init_std);
    block->train();
    return block;
}

// The bytes one block part's forward leaves allocated (what its graph keeps, and its output),
// counted by the tracking allocator, in `precision` on the CPU.
int64_t keptByPart(Block& block, BlockImpl::Part part, const torch::Tensor& x, RotaryTable& rotary,
                   ComputePrecision precision) {
    const ComputeScope scope(c10::kCPU, precision);
    torch::Tensor seq_aux;
    block->forwardPart(part, x, rotary, seq_aux);  // warm-up: the rotary table's turns
    MemoryAccount* account = newMemoryAccount();
    const ScopedMemoryAccount counted(account);
    const torch::Tensor y = block->forwardPart(part, x, rotary, seq_aux);
    return account->current.load();
}

// What one block part's backward holds at its high-water mark beyond what its forward left
// (the part's output gradient given), counted by the tracking allocator, in `precision`.
int64_t backwardHighWater(Block& block, BlockImpl::Part part, const torch::Tensor& x, RotaryTable& rotary,
                          ComputePrecision precision) {
    const ComputeScope scope(c10::kCPU, precision);
    torch::Tensor seq_aux;
    block->forwardPart(part, x, rotary, seq_aux).sum().backward();  // warm-up, and the weights' gradients made
    MemoryAccount* account = newMemoryAccount();
    const ScopedMemoryAccount counted(account);
    const torch::Tensor y = block->forwardPart(part, x, rotary, seq_aux);
    const torch::Tensor g = torch::ones_like(y);
    const int64_t kept = account->current.load();
    account->resetPeak();
    y.backward(g);
    return account->peak.load() - kept;
}

}  // namespace

class TestPrecisionPlan : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The planner's fp8 row against the kernels' own byte counts (what the tracking allocator sees
    // them allocate) and against a few values by hand.
    void fp8RowBytesAreTheKernels() {
        QCOMPARE(fp8RowBytes(64), int64_t(68));     // one partial tile
        QCOMPARE(fp8RowBytes(128), int64_t(132));   // one whole tile
        QCOMPARE(fp8RowBytes(200), int64_t(208));   // 128 + 72
        QCOMPARE(fp8RowBytes(7168), int64_t(7392)); // DeepSeek-V3's dim: 56 tiles
        for (int64_t n : {1, 32, 127, 128, 129, 200, 1408, 2048}) {
            QCOMPARE(fp8RowBytes(n), fp8Row(n));
            QCOMPARE(fp8RowBytes(n), kernels::fp8Bytes(1, n, kernels::Fp8Grouping::kRowTiles));
            QCOMPARE(130 * fp8RowBytes(n), kernels::fp8LinearSavedBytes(130, n));
        }
        // The gated node: its input rows and its two first projections, per row.
        QCOMPARE(kernels::fp8GatedMlpSavedBytes(96, 64, 200), 96 * (fp8RowBytes(64) + 2 * fp8RowBytes(200)));
    }

    // configs/tiny.json on the CPU with the kernels (the form the engine runs): one dense layer
    // and one MoE layer, every term by hand.
    void tinyLayersByHand() {
        const KernelsSwitch kernels_on(true);
        const RunConfig fp32 = preset("tiny.json");
        const ModelConfig& m = fp32.model;
        // The dims the literals below were counted from.
        QCOMPARE(m.dim, int64_t(64));
        QCOMPARE(m.inter_dim, int64_t(128));
        QCOMPARE(m.moe_inter_dim, int64_t(32));
        QCOMPARE(m.n_heads * m.v_head_dim, int64_t(64));
        QCOMPARE(m.q_lora_rank, int64_t(32));
        QCOMPARE(m.kv_lora_rank, int64_t(32));
        QCOMPARE(m.n_activated_experts, int64_t(2));
        QCOMPARE(m.n_shared_experts, int64_t(1));
        QCOMPARE(m.n_dense_layers, int64_t(1));
        const int64_t h = m.n_heads, qk = m.qk_nope_head_dim + m.qk_rope_head_dim, v = m.v_head_dim;
        const int64_t dim = m.dim, ql = m.q_lora_rank, kv = m.kv_lora_rank, r = m.qk_rope_head_dim;
        const int64_t k = m.n_activated_experts, E = m.n_routed_experts, mi = m.moe_inter_dim;

        // fp32, the CPU kernels: attn_norm in and out, wq_a's output, q_norm's output (and the
        // third LoRA term the planner keeps), wq_b's output, kv_a, kv_norm's output, kv,
        // query and key, the output, log-sum-exp.
        const int64_t attention32 =
            4 * (dim + dim + 3 * ql + h * qk + (kv + r) + kv + h * (m.qk_nope_head_dim + v) + 2 * h * qk + h * v + h);
        QCOMPARE(attention32, int64_t(3120));
        const int64_t dense32 = 4 * (dim + dim + 2 * m.inter_dim + dim);
        QCOMPARE(dense32, int64_t(1792));
        const int64_t moe32 = 4 * (2 * dim + E + k * dim + 2 * k * mi + k * dim + 2 * mi + dim) + 3 * k * 8;
        QCOMPARE(moe32, int64_t(2640));
        const LayerActivationBytes dense_layer = layerActivationBytesPerToken(fp32, 0);
        const LayerActivationBytes moe_layer = layerActivationBytesPerToken(fp32, 1);
        QCOMPARE(dense_layer.attention, attention32);
        QCOMPARE(dense_layer.feed_forward, dense32);
        QCOMPARE(moe_layer.feed_forward, moe32);

        // fp8: attn_norm's output -> fp8 copies for wq_a and wkv_a; q_norm's -> wq_b's;
        // kv_norm's -> wkv_b's; wo's input stays fp32 (the attention's output) with an fp8 copy.
        const int64_t attention8 = attention32 - 4 * (dim + ql + kv) + 2 * fp8Row(dim) + fp8Row(ql) + fp8Row(kv) +
                                   fp8Row(h * v);
        QCOMPARE(attention8, int64_t(3120 - 512 + 136 + 36 + 36 + 68));
        // Dense: the MLP's input and its two first projections in fp8, nothing else of it.
        const int64_t dense8 = 4 * (dim + dim) + fp8Row(dim) + 2 * fp8Row(m.inter_dim);
        QCOMPARE(dense8, int64_t(844));
        // MoE: ffn_norm in and out (the router keeps its output), gate scores, the routed rows
        // and hidden tensors in fp8, the expert outputs, the shared experts' fp8 input copy and
        // hidden tensors, the block output, the index vectors.
        const int64_t moe8 = 4 * (2 * dim + E) + k * fp8Row(dim) + 2 * k * fp8Row(mi) + 4 * k * dim + fp8Row(dim) +
                             2 * fp8Row(mi) + 4 * dim + 3 * k * 8;
        QCOMPARE(moe8, int64_t(1780));

        const RunConfig fp8 = withDtype(fp32, "fp8");
        QCOMPARE(layerActivationBytesPerToken(fp8, 0).attention, attention8);
        QCOMPARE(layerActivationBytesPerToken(fp8, 0).feed_forward, dense8);
        QCOMPARE(layerActivationBytesPerToken(fp8, 1).attention, attention8);
        QCOMPARE(layerActivationBytesPerToken(fp8, 1).feed_forward, moe8);
        // The terms themselves: fp32 - dropped + fp8, part by part.
        const Fp8LayerTerms dense_terms = fp8LayerTerms(fp8, 0), moe_terms = fp8LayerTerms(fp8, 1);
        QCOMPARE(dense_terms.attention_dropped, int64_t(4 * (64 + 32 + 32)));
        QCOMPARE(dense_terms.attention_fp8, int64_t(2 * 68 + 36 + 36 + 68));
        QCOMPARE(dense_terms.feed_forward_dropped, int64_t(4 * (64 + 2 * 128)));
        QCOMPARE(dense_terms.feed_forward_fp8, int64_t(68 + 2 * 132));
        QCOMPARE(moe_terms.feed_forward_dropped, int64_t(4 * (2 * 64 + 2 * 2 * 32 + 2 * 32)));
        QCOMPARE(moe_terms.feed_forward_fp8, int64_t(2 * 68 + 4 * 36 + 68 + 2 * 36));
        // bf16 keeps fp32's tensors on the CPU.
        QCOMPARE(layerActivationBytesPerToken(withDtype(fp32, "bf16"), 1).feed_forward, moe32);

        // The whole micro-batch: the embedding's output, the head's (final norm in and out,
        // log-softmax, two index vectors) and the two layers, times m x T tokens.
        const int64_t head = 4 * dim + 4 * (2 * dim + m.vocab_size) + 2 * 8;
        const int64_t tokens = fp32.train.micro_batch_size * fp32.train.seq_len;
        QCOMPARE(tokens, int64_t(8 * 64));
        QCOMPARE(planMemory(fp32).activation_bytes, (head + 2 * attention32 + dense32 + moe32) * tokens);
        // fp8 adds, once, its gated node's larger backward working set in the last layer (the
        // first whose backward runs): 8 x I fp32 per row, k routed rows and a shared one.
        const int64_t excess = 8 * (k + m.n_shared_experts) * mi * 4;
        QCOMPARE(dense_terms.backward_excess, int64_t(8 * 128 * 4));
        QCOMPARE(moe_terms.backward_excess, excess);
        QCOMPARE(planMemory(fp8).activation_bytes, (head + 2 * attention8 + dense8 + moe8 + excess) * tokens);
        QCOMPARE(planMemory(fp8).activation_bytes, int64_t(9432 + 3072) * 512);
    }

    // Against the engine: what each part's forward keeps under fp8, less what it keeps under
    // fp32, measured by the tracking allocator, is the planner's fp8 terms to the byte (fp8 copies
    // kept minus fp32 tensors dropped), on tiny (partial tiles) and on a model whose widths
    // cross tile boundaries (256, 384, 160, 136, 130: whole and partial tiles).
    void theTermsAreWhatTheEngineKeeps_data() {
        QTest::addColumn<bool>("wide");
        QTest::newRow("tiny") << false;
        QTest::newRow("widths across tiles") << true;
    }
    void theTermsAreWhatTheEngineKeeps() {
        QFETCH(bool, wide);
        const KernelsSwitch kernels_on(true);
        RunConfig c = preset("tiny.json");
        if (wide) {
            c.model.dim = 256;
            c.model.inter_dim = 384;
            c.model.moe_inter_dim = 160;
            c.model.q_lora_rank = 136;
            c.model.kv_lora_rank = 130;
        }
        torch::manual_seed(7);
        RotaryTable rotary(c.model);
        const int64_t B = 2, T = 16;
        const torch::Tensor x = torch::randn({B, T, c.model.dim}).requires_grad_(true);
        for (int64_t layer : {0, 1}) {  // dense, MoE
            Block block = initialised(layer, c.model);
            const Fp8LayerTerms t = fp8LayerTerms(withDtype(c, "fp8"), layer);
            for (const auto part : {BlockImpl::Part::Attention, BlockImpl::Part::FeedForward}) {
                const int64_t fp32 = keptByPart(block, part, x, rotary, ComputePrecision::kFp32);
                const int64_t fp8 = keptByPart(block, part, x, rotary, ComputePrecision::kFp8);
                const bool attention = part == BlockImpl::Part::Attention;
                const int64_t planned = attention ? t.attention_fp8 - t.attention_dropped
                                                  : t.feed_forward_fp8 - t.feed_forward_dropped;
                QVERIFY2(fp8 - fp32 == planned * B * T,
                         qPrintable(QString("layer %1 %2: measured %3 - %4 = %5, planned %6")
                                        .arg(layer).arg(attention ? "attention" : "feed-forward").arg(fp8).arg(fp32)
                                        .arg(fp8 - fp32).arg(planned * B * T)));
            }
        }
    }

    // The fp8 gated node's backward holds more than the fp32 node's while it runs: the planner's
    // backward_excess (8 x I fp32 a row of each node) against the tracking allocator's high-water
    // mark on small's dense and MoE feed-forward parts, per token (the slope between two token
    // counts, so that weight-sized buffers drop out): within 10 % (measured 8.0 I and 8.3 I).
    void theBackwardExcessIsMeasured() {
        const KernelsSwitch kernels_on(true);
        const RunConfig c = preset("small.json");
        RotaryTable rotary(c.model);
        torch::manual_seed(7);
        for (int64_t layer : {0, 1}) {  // dense, MoE
            Block block = initialised(layer, c.model);
            double excess[2];
            const int64_t lengths[2] = {64, 256};
            for (int i = 0; i < 2; ++i) {
                const torch::Tensor x = torch::randn({2, lengths[i], c.model.dim}).requires_grad_(true);
                excess[i] = double(backwardHighWater(block, BlockImpl::Part::FeedForward, x, rotary, ComputePrecision::kFp8) -
                                   backwardHighWater(block, BlockImpl::Part::FeedForward, x, rotary, ComputePrecision::kFp32));
            }
            const double per_token = (excess[1] - excess[0]) / double(2 * (lengths[1] - lengths[0]));
            const double planned = double(fp8LayerTerms(withDtype(c, "fp8"), layer).backward_excess);
            QCOMPARE(planned, double(8 * 4 * (layer == 0 ? 1536 : (4 + 1) * 256)));
            QVERIFY2(std::abs(per_token / planned - 1.0) < 0.1,
                     qPrintable(QString("layer %1: measured %2 bytes per token, planned %3").arg(layer).arg(per_token).arg(planned)));
        }
    }

    // The same model in the other forms: the CPU without the kernels (composed attention, and
    // the fp8 gated node all the same) and CUDA (three fp8 projections per MLP, each quantising
    // its own input).
    void tinyTermsInTheOtherForms() {
        {
            const KernelsSwitch kernels_off(false);
            const RunConfig c = withDtype(preset("tiny.json"), "fp8");
            const Fp8LayerTerms dense = fp8LayerTerms(c, 0), moe = fp8LayerTerms(c, 1);
            // wo's input is the reshape copy only it keeps: dropped, an fp8 copy instead.
            QCOMPARE(dense.attention_dropped, int64_t(4 * (64 + 32 + 32 + 64)));
            QCOMPARE(dense.attention_fp8, int64_t(2 * 68 + 36 + 36 + 68));
            // The composed MLP's four hidden tensors go; the node keeps two in fp8.
            QCOMPARE(dense.feed_forward_dropped, int64_t(4 * (64 + 4 * 128)));
            QCOMPARE(dense.feed_forward_fp8, int64_t(68 + 2 * 132));
            QCOMPARE(moe.feed_forward_dropped, int64_t(4 * (2 * 64 + 4 * (2 * 32 + 32))));
            QCOMPARE(moe.feed_forward_fp8, int64_t(2 * 68 + 4 * 36 + 68 + 2 * 36));
        }
        const RunConfig cuda = withDtype(preset("tiny.json", "cuda"), "fp8");
        const Fp8LayerTerms dense = fp8LayerTerms(cuda, 0), moe = fp8LayerTerms(cuda, 1);
        QCOMPARE(dense.attention_dropped, int64_t(4 * (64 + 32 + 32 + 64)));
        QCOMPARE(dense.attention_fp8, int64_t(2 * 68 + 36 + 36 + 68));
        // w1 and w3 each quantise the norm's output; w2 the SwiGLU product, which goes.
        QCOMPARE(dense.feed_forward_dropped, int64_t(4 * (64 + 128)));
        QCOMPARE(dense.feed_forward_fp8, int64_t(2 * 68 + 132));
        // Routed: two fp8 copies of each dispatched row, one of each product; shared: two of
        // the norm's output (kept fp32 by the router), one of its product.
        QCOMPARE(moe.feed_forward_dropped, int64_t(4 * (2 * 64 + 2 * 32 + 32)));
        QCOMPARE(moe.feed_forward_fp8, int64_t(2 * 2 * 68 + 2 * 36 + 2 * 68 + 36));
        // The CPU node's backward excess is the CPU's: on CUDA nothing is counted for it.
        QCOMPARE(dense.backward_excess, int64_t(0));
        QCOMPARE(moe.backward_excess, int64_t(0));
    }

    // bf16 moments: 2 bytes per moment element, on the device and in the offload tiers.
    void bf16MomentsHalveTheOptimizerState() {
        const RunConfig tiny = preset("tiny.json");
        // tiny's parameters by hand: embedding and head 64 x 64 each, the final norm; per block
        // the attention (wq_a 64x32, q_norm 32, wq_b 32x96, wkv_a 64x40, kv_norm 32, wkv_b
        // 32x128, wo 64x64) and two norms; the dense MLP 3 x 64 x 128; the MoE's gate 8 x 64
        // and its bias (8: a buffer, counted as the reference's state dict lists it, and so
        // given moments by the planner), 8 experts and 1 shared expert of 3 x 64 x 32.
        const int64_t attention = 64 * 32 + 32 + 32 * 96 + 64 * 40 + 32 + 32 * 128 + 64 * 64 + 2 * 64;
        const int64_t params = 2 * 64 * 64 + 64 + 2 * attention + 3 * 64 * 128 + 8 * 64 + 8 + 9 * 3 * 64 * 32;
        QCOMPARE(params, int64_t(120776));
        QCOMPARE(countParameters(tiny.model).total, params);
        QCOMPARE(planMemory(tiny).optimizer_bytes, 2 * params * 4);
        QCOMPARE(planMemory(withDtype(tiny, "fp32", "bf16")).optimizer_bytes, 2 * params * 2);
        QCOMPARE(planMemory(withDtype(tiny, "fp8", "bf16")).optimizer_bytes, 2 * params * 2);
        // The peak drops by exactly the moments' half.
        QCOMPARE(planMemory(withDtype(tiny, "fp8")).peak_bytes - planMemory(withDtype(tiny, "fp8", "bf16")).peak_bytes,
                 2 * params * 2);

        // Offloaded, on GPUs (CPU ranks keep no separate master): the host's moments, and with
        // runtime.offload_dir the files', halve; the fp32 master does not.
        RunConfig off = preset("small.json", "cuda");
        off.runtime.world_size = 4;
        off.train.micro_batch_size = 1;
        off.train.gradient_accumulation_steps = 4;
        off.runtime.zero_stage = 2;
        off.runtime.offload = "optimizer";
        const MemoryPlan host32 = planMemory(off), host16 = planMemory(withDtype(off, "fp32", "bf16"));
        QVERIFY(host32.host_moment_bytes > 0);
        QCOMPARE(host16.host_moment_bytes * 2, host32.host_moment_bytes);
        QCOMPARE(host16.host_master_bytes, host32.host_master_bytes);
        QCOMPARE(host16.host_moment_bytes, host16.optimizer_bytes);
        off.runtime.offload_dir = "/nvme";
        const MemoryPlan nvme32 = planMemory(off), nvme16 = planMemory(withDtype(off, "fp32", "bf16"));
        QCOMPARE(nvme32.nvme_bytes - nvme16.nvme_bytes, nvme32.optimizer_bytes / 2);
        QVERIFY(nvme16.host_staging_bytes < nvme32.host_staging_bytes);  // the moments' slots halve too
    }

    // planPrecisions on the small preset under a budget that only some precisions' m fit.
    void precisionsInOrderAndMonotone() {
        RunConfig small = preset("small.json");
        // Global batch 16 on one rank: m from 1 to 16. The budget: between bf16's peaks at m = 4
        // and m = 8, so bf16 fits 4 and fp8's smaller activations may reach 8.
        QCOMPARE(small.train.micro_batch_size * small.train.gradient_accumulation_steps, int64_t(16));
        QCOMPARE(small.train.micro_batch_size, int64_t(4));
        const int64_t at4 = planMemory(withDtype(small, "bf16")).peak_bytes;
        RunConfig eight = small;
        eight.train.micro_batch_size = 8;
        eight.train.gradient_accumulation_steps = 2;
        const int64_t at8 = planMemory(withDtype(eight, "bf16")).peak_bytes;
        const int64_t budget = (at4 + at8) / 2;
        const std::vector<PrecisionFit> fits = planPrecisions(small, budget);
        QCOMPARE(fits.size(), size_t(4));
        const char* dtypes[] = {"fp32", "bf16", "fp8", "fp8"};
        const char* moments[] = {"fp32", "fp32", "fp32", "bf16"};
        for (size_t i = 0; i < 4; ++i) {
            QCOMPARE(fits[i].dtype, std::string(dtypes[i]));
            QCOMPARE(fits[i].optimizer_dtype, std::string(moments[i]));
            QCOMPARE(fits[i].largest_micro_batch, fits[i].plan.largest_fitting_micro_batch);
            QCOMPARE(fits[i].plan.limit_bytes, budget);
            QCOMPARE(fits[i].plan.micro_batch_size, small.train.micro_batch_size);
            // Each is planMemory with the precision set.
            const MemoryPlan direct = planMemory(withDtype(small, dtypes[i], moments[i]), budget);
            QCOMPARE(fits[i].plan.peak_bytes, direct.peak_bytes);
            QCOMPARE(fits[i].largest_micro_batch, direct.largest_fitting_micro_batch);
        }
        QCOMPARE(fits[0].plan.peak_bytes, fits[1].plan.peak_bytes);  // bf16 counted as fp32
        QVERIFY(fits[2].plan.peak_bytes < fits[1].plan.peak_bytes);
        QVERIFY(fits[2].plan.activation_bytes < fits[1].plan.activation_bytes);
        QVERIFY(fits[3].plan.peak_bytes < fits[2].plan.peak_bytes);
        QCOMPARE(fits[3].plan.activation_bytes, fits[2].plan.activation_bytes);
        QCOMPARE(fits[3].plan.optimizer_bytes * 2, fits[2].plan.optimizer_bytes);
        for (size_t i = 1; i < 4; ++i) QVERIFY(fits[i].largest_micro_batch >= fits[i - 1].largest_micro_batch);
        QCOMPARE(fits[1].largest_micro_batch, int64_t(4));
        QCOMPARE(fits[3].largest_micro_batch, int64_t(8));  // fp8 with bf16 moments: twice the micro-batch

        // No budget: the configured micro-batch, as planMemory says.
        for (const PrecisionFit& f : planPrecisions(small)) QCOMPARE(f.largest_micro_batch, small.train.micro_batch_size);
        // runtime.memory_limit_mb wins over the argument, as in planMemory.
        RunConfig limited = small;
        limited.runtime.memory_limit_mb = budget / (1024 * 1024);
        QCOMPARE(planPrecisions(limited, 1).front().plan.limit_bytes, limited.runtime.memory_limit_mb * 1024 * 1024);
    }

    void precisionsAsJson() {
        const RunConfig tiny = preset("tiny.json");
        const std::vector<PrecisionFit> fits = planPrecisions(tiny, 64 << 20);
        const nlohmann::json j = nlohmann::json::parse(precisionFitsToJson(fits));
        QVERIFY(j.is_array());
        QCOMPARE(j.size(), size_t(4));
        for (size_t i = 0; i < 4; ++i) {
            const nlohmann::json& row = j[i];
            QCOMPARE(row["dtype"].get<std::string>(), fits[i].dtype);
            QCOMPARE(row["optimizer_dtype"].get<std::string>(), fits[i].optimizer_dtype);
            QCOMPARE(row["largest_micro_batch"].get<int64_t>(), fits[i].largest_micro_batch);
            QCOMPARE(row["micro_batch_size"].get<int64_t>(), fits[i].plan.micro_batch_size);
            QCOMPARE(row["peak_bytes"].get<int64_t>(), fits[i].plan.peak_bytes);
            QCOMPARE(row["activation_bytes"].get<int64_t>(), fits[i].plan.activation_bytes);
            QCOMPARE(row["optimizer_bytes"].get<int64_t>(), fits[i].plan.optimizer_bytes);
            QCOMPARE(row["limit_bytes"].get<int64_t>(), int64_t(64 << 20));
            QCOMPARE(row["fits"].get<bool>(), fits[i].plan.fits);
            QCOMPARE(row["plan"].dump(), nlohmann::json::parse(memoryPlanToJson(fits[i].plan)).dump());
        }
    }
};

QTEST_GUILESS_MAIN(TestPrecisionPlan)
#include "test_precision_plan.moc"
