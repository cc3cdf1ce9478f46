// Multi-head latent attention (MLA): low-rank queries and a compressed key/value latent.
#pragma once

#include <torch/torch.h>

#include "model/kv_cache.h"
#include "model/linear.h"
#include "model/rms_norm.h"
#include "model/rotary.h"
#include "trainbench/run_config.h"

namespace trainbench {

// Shape legend: B batch, T time, d model width, h heads, n = qk_nope_head_dim,
// r = qk_rope_head_dim, v = v_head_dim, c = kv_lora_rank, q = q_lora_rank.
class MLAAttentionImpl : public torch::nn::Module {
public:
    explicit MLAAttentionImpl(const ModelConfig& config);
    torch::Tensor forward(const torch::Tensor& x, RotaryTable& rotary);  // [B, T, d] -> [B, T, d]
    // Decoding with a cache: row b of x ([B, T, d]) holds cache row rows[b]'s tokens at positions
    // starts[b] .. starts[b] + T - 1. Their keys and values are written into the cache at those
    // positions, and each token attends to its row's positions up to its own (no other row's).
    // No gradients. The cache's tensors are made on first use, sized rows x capacity.
    torch::Tensor decode(const torch::Tensor& x, RotaryTable& rotary, KvCache& cache, LayerCache& layer,
                         const std::vector<int64_t>& rows, const std::vector<int64_t>& starts);

private:
    int64_t heads_, nope_, rope_, v_, kv_rank_;
    double softmax_scale_;
    torch::nn::Linear wq{nullptr}, wq_a{nullptr}, wq_b{nullptr};
    RMSNorm q_norm{nullptr};
    torch::nn::Linear wkv_a{nullptr}, wkv_b{nullptr}, wo{nullptr};
    RMSNorm kv_norm{nullptr};
};
TORCH_MODULE(MLAAttention);

}  // namespace trainbench
