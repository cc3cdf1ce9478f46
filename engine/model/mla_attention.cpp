// MLA attention, full-sequence causal (training form: no KV cache, no weight absorption).
#include "model/mla_attention.h"

#include "kernels/causal_attention.h"

namespace trainbench {

MLAAttentionImpl::MLAAttentionImpl(const ModelConfig& c)
    : heads_(c.n_heads), nope_(c.qk_nope_head_dim), rope_(c.qk_rope_head_dim), v_(c.v_head_dim),
      kv_rank_(c.kv_lora_rank), softmax_scale_(attentionSoftmaxScale(c)) {
    const int64_t qk = c.qkHeadDim();
    // Registration order follows the reference module so state dicts list in the same order.
    if (c.q_lora_rank == 0) {
        wq = register_module("wq", plainLinear(c.dim, heads_ * qk));
    } else {
        wq_a = register_module("wq_a", plainLinear(c.dim, c.q_lora_rank));
        q_norm = register_module("q_norm", RMSNorm(c.q_lora_rank));
        wq_b = register_module("wq_b", plainLinear(c.q_lora_rank, heads_ * qk));
    }
    wkv_a = register_module("wkv_a", plainLinear(c.dim, kv_rank_ + rope_));
    kv_norm = register_module("kv_norm", RMSNorm(kv_rank_));
    wkv_b = register_module("wkv_b", plainLinear(kv_rank_, heads_ * (nope_ + v_)));
    wo = register_module("wo", plainLinear(heads_ * v_, c.dim));
}

torch::Tensor MLAAttentionImpl::forward(const torch::Tensor& x, RotaryTable& rotary) {
    const int64_t B = x.size(0), T = x.size(1);
    auto q = wq ? project(wq, x) : project(wq_b, q_norm(project(wq_a, x)));              // [B, T, h*(n+r)]
    q = q.view({B, T, heads_, nope_ + rope_});
    torch::Tensor query;  // [B, T, h, n+r]
    if (nope_ % 2 == 0) {
        // The whole head goes through the rotation, its first n channels unchanged: no split of
        // the query into parts and no join afterwards.
        query = rotary.apply(q, /*skip=*/nope_);
    } else {  // an odd n would pair channels across the boundary
        auto parts = q.split_with_sizes({nope_, rope_}, -1);
        query = torch::cat({parts[0], rotary.apply(parts[1])}, -1);
    }

    // split_with_sizes, not two slices: its backward joins the parts' gradients in one copy,
    // where each slice's backward fills a full-size zero tensor and the two are then added.
    auto kv_a = project(wkv_a, x).split_with_sizes({kv_rank_, rope_}, -1);  // [B, T, c], [B, T, r]
    auto k_pe = rotary.apply(kv_a[1].unsqueeze(2));                         // [B, T, 1, r], shared by heads
    auto kv = project(wkv_b, kv_norm(kv_a[0])).view({B, T, heads_, nope_ + v_});  // [B, T, h, n+v]
    torch::Tensor out;                                                            // [B, T, h, v]
    if (kernels::causalAttentionTakes(query, kv, k_pe, nope_)) {
        out = kernels::causalAttention(query, kv, k_pe, nope_, softmax_scale_);
    } else {
        auto parts = kv.split_with_sizes({nope_, v_}, -1);
        auto key = torch::cat({parts[0], k_pe.expand({B, T, heads_, rope_})}, -1);  // [B, T, h, n+r]
        out = at::scaled_dot_product_attention(query.transpose(1, 2), key.transpose(1, 2), parts[1].transpose(1, 2),
                                               /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true,
                                               /*scale=*/softmax_scale_)
                  .transpose(1, 2);
    }
    return project(wo, out.reshape({B, T, heads_ * v_}));
}

}  // namespace trainbench
