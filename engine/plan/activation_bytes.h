// The planner's count of what one micro-batch's forward pass keeps for the backward
// (activation_bytes.cpp has the table), shared by memory_plan.cpp and precision_fits.cpp.
#pragma once

#include <cstdint>

#include "trainbench/run_config.h"

namespace trainbench::activations {

constexpr int64_t kFloat = 4;
constexpr int64_t kIndex = 8;
// More bytes than any device holds (512 PiB): what a product of sizes is clamped to, so that
// a micro-batch far too large for any machine (the planner tries every divisor of m x K, up
// to 2^40 tokens) says "does not fit" instead of wrapping around 64 bits.
constexpr int64_t kMoreThanAnyDevice = int64_t(1) << 59;
inline int64_t clampedProduct(__int128 a, __int128 b) {
    const __int128 product = a * b;
    return product > kMoreThanAnyDevice ? kMoreThanAnyDevice : static_cast<int64_t>(product);
}

// Which forms run, and so what they keep: the CPU kernels' (fused) or the composed ones; on a
// CPU the composed attention is ATen's math form, which keeps the softmax probabilities (h x T
// per token); runtime.dtype fp8 keeps the projections' and gated MLPs' inputs in fp8.
struct Layout {
    bool on_cpu = false;
    bool fused = false;  // the CPU kernels run (on a CPU, fp32 or bf16)
    bool fp8 = false;    // runtime.dtype fp8
    int64_t seq_len = 0;
    // runtime.head_chunk_tokens other than 0: the head keeps dL/dx [tokens, d] instead of the
    // log-softmax [tokens, vocab] (model/chunked_head_loss.h)
    bool chunked_head = true;
};

Layout layoutOf(const RunConfig& config);

// Bytes per token of one block's parts, in `layout`'s forms.
int64_t attentionBytesPerToken(const ModelConfig& c, const Layout& layout);
int64_t feedForwardBytesPerToken(const ModelConfig& c, int64_t layer, int64_t expert_parallel, const Layout& layout);

// One micro-batch of `tokens` under the recomputation mode: what the peak holds.
int64_t activationBytes(const ModelConfig& c, int64_t tokens, Recomputation recomputation, int64_t expert_parallel,
                        const Layout& layout);

}  // namespace trainbench::activations
