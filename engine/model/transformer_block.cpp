// The transformer block's assembly, its forward by parts and its decoding step.
#include "model/transformer_block.h"

namespace trainbench {

BlockImpl::BlockImpl(int64_t layer, const ModelConfig& c) {
    attn = register_module("attn", MLAAttention(c));
    if (layer < c.n_dense_layers) dense_ = register_module("ffn", MLP(c.dim, c.inter_dim));
    else moe_ = register_module("ffn", MoE(c));
    attn_norm = register_module("attn_norm", RMSNorm(c.dim));
    ffn_norm = register_module("ffn_norm", RMSNorm(c.dim));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux) {
    return forwardPart(Part::Whole, x, rotary, seq_aux);
}

torch::Tensor BlockImpl::forwardPart(Part part, const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux) {
    if (part == Part::Whole) {
        return forwardPart(Part::FeedForward, forwardPart(Part::Attention, x, rotary, seq_aux), rotary, seq_aux);
    }
    if (part == Part::Attention) return x + attn->forward(attn_norm(x), rotary);
    if (dense_) return x + dense_(ffn_norm(x));
    MoEOutput out = moe_->forward(ffn_norm(x));
    if (out.seq_aux.defined()) seq_aux = seq_aux.defined() ? seq_aux + out.seq_aux : out.seq_aux;
    return x + out.y;
}

torch::Tensor BlockImpl::decode(const torch::Tensor& x, RotaryTable& rotary, KvCache& cache, LayerCache& layer,
                                const std::vector<int64_t>& rows, const std::vector<int64_t>& starts) {
    auto h = x + attn->decode(attn_norm(x), rotary, cache, layer, rows, starts);
    torch::Tensor unused;  // the balance loss: training only
    return forwardPart(Part::FeedForward, h, rotary, unused);
}

}  // namespace trainbench
