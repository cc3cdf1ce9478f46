// The planner's activation count. It follows what autograd keeps alive in this engine's forward
// pass (engine/model), tensor by tensor, per token (fp32: 4 bytes an element):
//   RMSNorm            its input and output (one node, see model/rms_norm.cpp) 2 x width
//   MLA                q (or its LoRA input, norm and output), kv_a, the latent norm's two
//                      outputs, kv, the attention's query and key, its output and log-sum-exp,
//                      and (composed form) the heads' reshape copy
//   dense MLP          the w1 and w3 outputs, and (composed form) the SiLU output and the
//                      product: 2 or 4 x inter_dim
//   MoE                gate scores, routed copies of the input, per routed slot the expert's
//                      hidden tensors (2 or 4), the concatenated expert outputs, the shared
//                      experts' hidden tensors (2 or 4), and three int64 index vectors
//   residual streams   one per block output, plus the embedding output
//   head               the final norm's input and output, and the log-softmax output over the
//                      vocabulary; chunked (runtime.head_chunk_tokens, model/chunked_head_loss.h)
//                      dL/dx [tokens, d] in its place, computed in the forward
// plus the head's own working memory (memory_plan.cpp's logits_bytes): whole, at the start of
// backward the gradient of the log-softmax and of the logits; chunked, one chunk's logits and
// the head weight's gradient.
// The fused form is the CPU kernels' (engine/kernels, fp32 or bf16 on the CPU): the gated MLP's node
// keeps its two first projections only, the attention's output is already in the heads' order.
//
// bf16 counts as fp32 everywhere. On the CPU its tensors are fp32 (only the kernels' products
// round their operands: kernels/product_precision.h); on CUDA autocast keeps bf16 copies of the
// products' inputs, 2 bytes, but the planner counts 4 there too (docs/design/fp8.md section 4):
// an overestimate that the layout advice's margin absorbs and that keeps bf16's and fp32's
// plans the same.
//
// runtime.dtype fp8 (DeepSeek-V3's recipe, docs/design/fp8.md): the MLA projections (wq or
// wq_a and wq_b, wkv_a, wkv_b, wo), the dense MLPs and the shared and routed experts keep their
// inputs for the backward as E4M3 with one fp32 scale per 1 x 128 tile, fp8RowBytes(n) =
// n + 4 ceil(n / 128) per token for a row of n features; the embedding, head, router, norms and
// attention core stay fp32. Per token, against the fp32 count (fp8LayerTerms):
//   attention  attn_norm's output (dim fp32) -> two fp8 copies, wq's (or wq_a's) and wkv_a's;
//              q_norm's output (q_lora_rank) -> one fp8 copy, wq_b's; kv_norm's output
//              (kv_lora_rank) -> one, wkv_b's; wo adds an fp8 copy of its input (h x v_head_dim),
//              whose fp32 the CPU attention kernel keeps anyway as its output (the composed
//              form's reshape copy, which only wo kept, goes).
//   on a CPU: the fp8 gated-MLP node (kernels/fp8_gated_mlp.h; with the kernels off too) keeps
//   fp8 of its input rows and of its two first projections a and b, and recomputes the SwiGLU
//   output in its backward:
//   dense MLP  ffn_norm's output (dim) -> fp8(dim); the 2 (4 composed) hidden tensors of
//              inter_dim -> 2 fp8(inter_dim)
//   MoE        the dispatched copies, k x dim -> k fp8(dim) (one node for the routed experts);
//              their hidden tensors -> 2k fp8(moe_inter_dim); the shared experts' -> 2
//              fp8(n_shared x moe_inter_dim); ffn_norm's output stays fp32 (the router's linear
//              keeps it) and the shared experts add fp8(dim) of it
//   the backward's working set: the fp8 gated-MLP node's backward holds more at once than the
//              fp32 node's (it dequantises x, a and b to fp32 and recomputes sigmoid(a), SiLU(a)
//              and h beside gh, ga, gb and their tiles, where the fp32 node holds gh, h and
//              the two first projections' gradient): about 8 x I fp32 more per row of each node
//              of the part, measured by the tracking allocator (test_precision_plan: small's
//              dense MLP 8.0 I, its MoE part, k routed rows and the shared experts' row, 8.3 I;
//              tiny and a 256-wide variant 6.6 to 9.0 I). Counted once, where the backward runs
//              with every earlier activation alive: the last layer's feed-forward part, or with
//              recomputation the layer whose recomputed part is largest with it. (The fp32
//              count leaves every node's backward working set out; this is fp8's excess over it.)
//   on CUDA (composed; kernels/fp8_linear_cuda.h keeps its input in fp8 only): each of the
//   three projections quantises its own input, so the MLP input becomes two fp8 copies (w1's and
//   w3's) and the SwiGLU product (w2's input) one; a, b and the SiLU output stay (SiLU's and the
//   product's backward keep them). Approximate there as bf16 is: the tensors autocast keeps are
//   counted at 4 bytes, and under expert parallelism the exchanged copies stay at fp32.
#include "plan/activation_bytes.h"

#include <algorithm>

#include "kernels/cpu_kernels.h"
#include "trainbench/device_type.h"
#include "trainbench/memory_plan.h"

namespace trainbench {
namespace activations {
namespace {

// The fp8 gated node's backward working set beyond the fp32 node's, in fp32 tensors of its
// hidden width per row (the table above: measured 6.6 to 9.0).
constexpr int64_t kFp8BackwardRowsOfHidden = 8;

// The gated MLP's hidden tensors per row: its node's two first projections, or the composed
// form's four.
int64_t hiddenTensors(bool fused) { return fused ? 2 : 4; }

// The feed-forward norm's input is the residual after attention, its output the MLP's input.
int64_t denseFfnBytesPerToken(const ModelConfig& c, bool fused) {
    return (2 * c.dim + hiddenTensors(fused) * c.inter_dim + c.dim) * kFloat;
}

// Expert parallelism adds, per routed slot, the copy received from the exchange and the
// experts' outputs in that order before they go home (the rows a rank receives average the
// rows it sends).
int64_t moeFfnBytesPerToken(const ModelConfig& c, int64_t expert_parallel, bool fused) {
    const int64_t k = c.n_activated_experts;
    int64_t floats = 2 * c.dim + c.n_routed_experts;  // ffn_norm, gate scores
    floats += k * c.dim;                              // dispatched copies of the input
    if (expert_parallel > 1) floats += 2 * k * c.dim;
    floats += hiddenTensors(fused) * k * c.moe_inter_dim;  // routed experts' hidden tensors
    floats += k * c.dim;                              // concatenated expert outputs
    floats += hiddenTensors(fused) * c.n_shared_experts * c.moe_inter_dim;
    floats += c.dim;                                  // the block output
    return floats * kFloat + 3 * k * kIndex;
}

int64_t embeddingOutputBytes(const ModelConfig& c) { return c.dim * kFloat; }
int64_t headBytesPerToken(const ModelConfig& c, const Layout& layout) {
    // final norm, log-softmax (or chunked: dL/dx), tokens
    return 2 * c.dim * kFloat + (layout.chunked_head ? c.dim : c.vocab_size) * kFloat + 2 * kIndex;
}

int64_t fp32AttentionBytesPerToken(const ModelConfig& c, const Layout& layout) {
    const int64_t h = c.n_heads, qk = c.qkHeadDim(), v = c.v_head_dim, kv = c.kv_lora_rank, r = c.qk_rope_head_dim;
    int64_t floats = 2 * c.dim;                                  // attn_norm
    floats += c.q_lora_rank > 0 ? 3 * c.q_lora_rank + h * qk : h * qk;  // q path
    // kv_a (the latent norm reads its slice in place), the latent norm's output, kv.
    floats += (kv + r) + kv + h * (c.qk_nope_head_dim + v);
    floats += 2 * h * qk;                                        // the attention's query and key
    floats += (layout.fused ? 1 : 2) * h * v + h;                // output, log-sum-exp, reshape
    if (layout.on_cpu && !layout.fused) floats += h * layout.seq_len;  // probabilities
    return floats * kFloat;                                      // (its output: the MLP's norm's input)
}

int64_t fp32FeedForwardBytesPerToken(const ModelConfig& c, int64_t layer, int64_t expert_parallel, const Layout& layout) {
    return layer < c.n_dense_layers ? denseFfnBytesPerToken(c, layout.fused)
                                    : moeFfnBytesPerToken(c, expert_parallel, layout.fused);
}

int64_t blockBytesPerToken(const ModelConfig& c, int64_t layer, int64_t expert_parallel, const Layout& layout) {
    return attentionBytesPerToken(c, layout) + feedForwardBytesPerToken(c, layer, expert_parallel, layout);
}

// The fp8 terms of one layer in `layout`'s forms (whatever layout.fp8 says): the table above.
Fp8LayerTerms fp8Terms(const ModelConfig& c, int64_t layer, const Layout& layout) {
    Fp8LayerTerms t;
    const int64_t hv = c.n_heads * c.v_head_dim;
    int64_t dropped = c.dim + c.kv_lora_rank;
    int64_t kept = 2 * fp8RowBytes(c.dim) + fp8RowBytes(c.kv_lora_rank) + fp8RowBytes(hv);
    if (c.q_lora_rank > 0) {
        dropped += c.q_lora_rank;
        kept += fp8RowBytes(c.q_lora_rank);
    }
    if (!layout.fused) dropped += hv;  // the reshape copy, kept by wo alone
    t.attention_dropped = dropped * kFloat;
    t.attention_fp8 = kept;
    // The fp8 gated-MLP node takes every fp32 CPU MLP, with the CPU kernels on or off.
    const bool node = layout.on_cpu;
    const int64_t hidden = hiddenTensors(layout.fused);
    if (layer < c.n_dense_layers) {
        dropped = c.dim + (node ? hidden : 1) * c.inter_dim;
        kept = (node ? 1 : 2) * fp8RowBytes(c.dim) + (node ? 2 : 1) * fp8RowBytes(c.inter_dim);
    } else {
        const int64_t k = c.n_activated_experts, shared = c.n_shared_experts * c.moe_inter_dim;
        const int64_t inputs = node ? 1 : 2, firsts = node ? 2 : 1;  // fp8 copies per input, per hidden width
        dropped = k * c.dim + (node ? hidden : 1) * (k * c.moe_inter_dim + shared);
        kept = inputs * k * fp8RowBytes(c.dim) + firsts * k * fp8RowBytes(c.moe_inter_dim);
        if (shared > 0) kept += inputs * fp8RowBytes(c.dim) + firsts * fp8RowBytes(shared);
    }
    t.feed_forward_dropped = dropped * kFloat;
    t.feed_forward_fp8 = kept;
    if (node) {
        const int64_t rows_by_width = layer < c.n_dense_layers
                                          ? c.inter_dim
                                          : (c.n_activated_experts + c.n_shared_experts) * c.moe_inter_dim;
        t.backward_excess = kFp8BackwardRowsOfHidden * rows_by_width * kFloat;
    }
    return t;
}

}  // namespace

Layout layoutOf(const RunConfig& config) {
    Layout layout;
    layout.on_cpu = deviceTypeOf(config.runtime) == DeviceType::Cpu;
    layout.fused = layout.on_cpu && kernels::cpuKernelsEnabled();
    layout.fp8 = isChoice(config.runtime.dtype, ComputeDtype::Fp8);
    layout.seq_len = config.train.seq_len;
    layout.chunked_head = !(config.runtime.head_chunk_tokens && *config.runtime.head_chunk_tokens == 0);
    return layout;
}

// Bytes saved for backward per token by one attention sub-block (its input norm included).
int64_t attentionBytesPerToken(const ModelConfig& c, const Layout& layout) {
    int64_t bytes = fp32AttentionBytesPerToken(c, layout);
    if (layout.fp8) {
        const Fp8LayerTerms t = fp8Terms(c, 0, layout);
        bytes += t.attention_fp8 - t.attention_dropped;
    }
    return bytes;
}

int64_t feedForwardBytesPerToken(const ModelConfig& c, int64_t layer, int64_t expert_parallel, const Layout& layout) {
    int64_t bytes = fp32FeedForwardBytesPerToken(c, layer, expert_parallel, layout);
    if (layout.fp8) {
        const Fp8LayerTerms t = fp8Terms(c, layer, layout);
        bytes += t.feed_forward_fp8 - t.feed_forward_dropped;
    }
    return bytes;
}

// With full recomputation each block keeps only its input; the largest block's activations
// exist once more, while that block runs again in the backward. With the feed-forward parts
// recomputed each block keeps its attention's activations and its output; the largest
// feed-forward part's exist once more.
// Under fp8 the largest includes the gated node's backward working set beyond fp32's (once,
// see the table above).
int64_t activationBytes(const ModelConfig& c, int64_t tokens, Recomputation recomputation, int64_t ep,
                        const Layout& layout) {
    int64_t per_token = embeddingOutputBytes(c) + headBytesPerToken(c, layout);
    int64_t largest = 0;
    auto addBlock = [&](int64_t layer, bool first_in_backward) {
        const int64_t excess = layout.fp8 ? fp8Terms(c, layer, layout).backward_excess : 0;
        if (recomputation == Recomputation::Full) {
            largest = std::max(largest, blockBytesPerToken(c, layer, ep, layout) + excess);
            per_token += c.dim * kFloat;
        } else if (recomputation == Recomputation::Feedforward) {
            largest = std::max(largest, feedForwardBytesPerToken(c, layer, ep, layout) + excess);
            per_token += attentionBytesPerToken(c, layout) + c.dim * kFloat;
        } else {
            per_token += blockBytesPerToken(c, layer, ep, layout);
            if (first_in_backward) largest = std::max(largest, excess);
        }
    };
    for (int64_t layer = 0; layer < c.n_layers; ++layer) addBlock(layer, layer == c.n_layers - 1 && c.n_mtp_depth == 0);
    // Each multi-token-prediction module (model/mtp_module.h): its joining step (eh_proj keeps
    // the concatenation, 2 d floats, and each norm its statistic; the norms' inputs are the
    // embeddings and the last hidden state, kept anyway, and their outputs are freed once
    // joined), a block of the model's kind, and the shared head's terms again; over all T
    // positions (depth k has T - k, a bound).
    const int64_t module_layer = c.n_dense_layers >= c.n_layers ? 0 : c.n_layers;
    for (int64_t k = 0; k < c.n_mtp_depth; ++k) {
        per_token += (2 * c.dim + 2) * kFloat + headBytesPerToken(c, layout);
        addBlock(module_layer, k == c.n_mtp_depth - 1);
    }
    return clampedProduct(per_token + largest, tokens);
}

}  // namespace activations

int64_t fp8RowBytes(int64_t n) { return n + activations::kFloat * ((n + 127) / 128); }

Fp8LayerTerms fp8LayerTerms(const RunConfig& config, int64_t layer) {
    return activations::fp8Terms(config.model, layer, activations::layoutOf(config));
}

LayerActivationBytes layerActivationBytesPerToken(const RunConfig& config, int64_t layer) {
    const activations::Layout layout = activations::layoutOf(config);
    const int64_t ep = std::max<int64_t>(1, config.runtime.expert_parallel);
    return {activations::attentionBytesPerToken(config.model, layout),
            activations::feedForwardBytesPerToken(config.model, layer, ep, layout)};
}

}  // namespace trainbench
