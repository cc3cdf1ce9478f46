// One transformer block: MLA attention and a dense MLP or an MoE, each behind an RMSNorm and a residual.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "kernels/compute_scope.h"
#include "model/kv_cache.h"
#include "model/mla_attention.h"
#include "model/mlp.h"
#include "model/moe.h"
#include "model/rms_norm.h"
#include "model/rotary.h"
#include "model/weight_residency.h"
#include "trainbench/run_config.h"

namespace trainbench {

class BlockImpl : public torch::nn::Module {
public:
    BlockImpl(int64_t layer, const ModelConfig& config);
    // x: [B, T, d]; seq_aux accumulates the MoE balance loss per sequence ([B]) when defined.
    torch::Tensor forward(const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux);
    // The parts the forward is made of: the attention sub-block h = x + attn(attn_norm(x)), and
    // the feed-forward one y = h + ffn(ffn_norm(h)) (dense or MoE).
    enum class Part { Whole, Attention, FeedForward };
    torch::Tensor forwardPart(Part part, const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux);
    // A part that keeps only its input for the backward, which runs the part's forward again
    // (runtime.activation_checkpointing "full": the whole block; "feedforward": the dense MLP or
    // the MoE, attention keeping its activations; model/block_recomputation.cpp).
    torch::Tensor recomputedForward(Part part, const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux);
    // The backward of such a part: its forward again from input `x` with gradients on (the
    // active compute precision, loads not counted twice), back-propagated from `grad_y` and
    // `grad_aux` (either may be undefined); the parameters' gradients accumulate, and the
    // gradient of `x` is returned. `precision`: the first forward's.
    torch::Tensor recomputedBackward(Part part, const torch::Tensor& x, RotaryTable& rotary, const torch::Tensor& grad_y,
                                     const torch::Tensor& grad_aux, ComputePrecision precision);
    // Decoding with the attention cache (MLAAttentionImpl::decode); no gradients.
    torch::Tensor decode(const torch::Tensor& x, RotaryTable& rotary, KvCache& cache, LayerCache& layer,
                         const std::vector<int64_t>& rows, const std::vector<int64_t>& starts);
    // With sharded weights (runtime.zero_stage 3): the residency that holds them, and this
    // block's unit (its recomputed backward asks for the weights first).
    void residesIn(WeightResidency* residency, int64_t unit) { residency_ = residency, unit_ = unit; }
    WeightResidency* residency() const { return residency_; }
    int64_t unit() const { return unit_; }
    MoE moe() const { return moe_; }

private:
    RMSNorm attn_norm{nullptr}, ffn_norm{nullptr};
    MLAAttention attn{nullptr};
    MLP dense_{nullptr};
    MoE moe_{nullptr};
    WeightResidency* residency_ = nullptr;
    int64_t unit_ = 0;
};
TORCH_MODULE(Block);

}  // namespace trainbench
