// MLA attention, full-sequence causal (training form: no KV cache, no weight absorption).
#include "model/mla_attention.h"

#include <algorithm>
#include <limits>

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

namespace trainbench {

torch::Tensor MLAAttentionImpl::decode(const torch::Tensor& x, RotaryTable& rotary, KvCache& cache, LayerCache& layer,
                                       const std::vector<int64_t>& rows, const std::vector<int64_t>& starts) {
    torch::NoGradGuard no_grad;
    const int64_t B = x.size(0), T = x.size(1);
    auto options = torch::TensorOptions(x.device()).dtype(torch::kInt64);
    // Each token's position, and the widest row's extent after these tokens.
    std::vector<int64_t> flat_positions;
    int64_t extent = 0;
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t t = 0; t < T; ++t) flat_positions.push_back(starts[b] + t);
        extent = std::max(extent, starts[b] + T);
    }
    if (extent > cache.capacity) throw std::invalid_argument("decode: past the cache's positions (model.max_seq_len)");
    const auto positions = torch::tensor(flat_positions, torch::kInt64).view({B, T}).to(x.device());
    // The cache's rows these tokens continue, cut to the positions seen: a view when the rows
    // are consecutive (a whole wave), else a copy of the seen positions only.
    bool consecutive = true;
    for (int64_t b = 1; b < B; ++b) consecutive = consecutive && rows[b] == rows[b - 1] + 1;
    const auto row_index = torch::tensor(rows, torch::kInt64).to(x.device());
    auto seenOf = [&](const torch::Tensor& slots) {
        auto upto = slots.narrow(1, 0, extent);
        return consecutive ? upto.narrow(0, rows[0], B) : upto.index_select(0, row_index);
    };

    auto q = wq ? project(wq, x) : project(wq_b, q_norm(project(wq_a, x)));
    q = rotary.applyAt(q.view({B, T, heads_, nope_ + rope_}), positions, /*skip=*/nope_);  // [B, T, h, n+r]
    auto kv_a = project(wkv_a, x).split_with_sizes({kv_rank_, rope_}, -1);
    auto k_pe = rotary.applyAt(kv_a[1].unsqueeze(2), positions);  // [B, T, 1, r]
    const auto latent = kv_norm(kv_a[0]);                        // [B, T, c]

    // The positions each token may see: its row's, up to its own.
    auto seen = torch::arange(extent, options).view({1, 1, extent});            // [1, 1, S]
    auto allowed = seen.le(positions.unsqueeze(-1)).unsqueeze(1);                 // [B, 1, T, S]
    const auto soft = x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    torch::Tensor scores, out;  // scores [B, h, T, S]; out [B, T, h, v]
    if (cache.form == CacheForm::Naive) {
        auto kv = project(wkv_b, latent).view({B, T, heads_, nope_ + v_}).split_with_sizes({nope_, v_}, -1);
        auto key = torch::cat({kv[0], k_pe.expand({B, T, heads_, rope_})}, -1);  // [B, T, h, n+r]
        if (!layer.keys.defined()) {
            layer.keys = torch::zeros({cache.rows, cache.capacity, heads_, nope_ + rope_}, key.options());
            layer.values = torch::zeros({cache.rows, cache.capacity, heads_, v_}, key.options());
        }
        for (int64_t b = 0; b < B; ++b) {
            layer.keys[rows[b]].narrow(0, starts[b], T).copy_(key[b]);
            layer.values[rows[b]].narrow(0, starts[b], T).copy_(kv[1][b]);
        }
        auto keys = seenOf(layer.keys);      // [B, S, h, n+r]
        auto values = seenOf(layer.values);  // [B, S, h, v]
        scores = torch::einsum("bthd,bshd->bhts", {q, keys}) * softmax_scale_;
        auto probs = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity())
                         .softmax(-1, soft)
                         .to(values.scalar_type());
        out = torch::einsum("bhts,bshv->bthv", {probs, values});
    } else {
        // Absorbed: q_nope . (W_k c) = (W_k^T q_nope) . c, and probs . (W_v c) = W_v (probs . c).
        auto w = wkv_b->weight.view({heads_, nope_ + v_, kv_rank_});
        auto w_key = w.narrow(1, 0, nope_), w_value = w.narrow(1, nope_, v_);  // [h, n, c], [h, v, c]
        if (!layer.latent.defined()) {
            layer.latent = torch::zeros({cache.rows, cache.capacity, kv_rank_}, latent.options());
            layer.rope_key = torch::zeros({cache.rows, cache.capacity, rope_}, latent.options());
        }
        for (int64_t b = 0; b < B; ++b) {
            layer.latent[rows[b]].narrow(0, starts[b], T).copy_(latent[b]);
            layer.rope_key[rows[b]].narrow(0, starts[b], T).copy_(k_pe[b].squeeze(1));
        }
        auto latents = seenOf(layer.latent);     // [B, S, c]
        auto rope_keys = seenOf(layer.rope_key);  // [B, S, r]
        auto parts = q.split_with_sizes({nope_, rope_}, -1);
        auto q_latent = torch::einsum("bthn,hnc->bthc", {parts[0], w_key});                // [B, T, h, c]
        scores = (torch::einsum("bthc,bsc->bhts", {q_latent, latents}) +
                  torch::einsum("bthr,bsr->bhts", {parts[1], rope_keys})) *
                 softmax_scale_;
        auto probs = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity())
                         .softmax(-1, soft)
                         .to(latents.scalar_type());
        auto mixed = torch::einsum("bhts,bsc->bthc", {probs, latents});  // [B, T, h, c]
        out = torch::einsum("bthc,hvc->bthv", {mixed, w_value});
    }
    return project(wo, out.reshape({B, T, heads_ * v_}));
}

}  // namespace trainbench
