// MLA attention, full-sequence causal (training form: no KV cache, no weight absorption).
#include "model/mla_attention.h"

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
    auto q = wq ? wq(x) : wq_b(q_norm(wq_a(x)));           // [B, T, h*(n+r)]
    q = q.view({B, T, heads_, nope_ + rope_});
    auto q_nope = q.slice(-1, 0, nope_);                      // [B, T, h, n]
    auto q_pe = rotary.apply(q.slice(-1, nope_));             // [B, T, h, r]

    auto kv_a = wkv_a(x);                                     // [B, T, c+r]
    auto latent = kv_a.slice(-1, 0, kv_rank_);                // [B, T, c]
    auto k_pe = rotary.apply(kv_a.slice(-1, kv_rank_).unsqueeze(2));  // [B, T, 1, r], shared by heads
    auto kv = wkv_b(kv_norm(latent)).view({B, T, heads_, nope_ + v_});
    auto k_nope = kv.slice(-1, 0, nope_);                     // [B, T, h, n]
    auto value = kv.slice(-1, nope_);                         // [B, T, h, v]

    auto query = torch::cat({q_nope, q_pe}, -1).transpose(1, 2);                              // [B, h, T, n+r]
    auto key = torch::cat({k_nope, k_pe.expand({B, T, heads_, rope_})}, -1).transpose(1, 2);  // [B, h, T, n+r]
    auto out = at::scaled_dot_product_attention(query, key, value.transpose(1, 2), /*attn_mask=*/{},
                                                /*dropout_p=*/0.0, /*is_causal=*/true,
                                                /*scale=*/softmax_scale_);  // [B, h, T, v]
    return wo(out.transpose(1, 2).reshape({B, T, heads_ * v_}));
}

}  // namespace trainbench
