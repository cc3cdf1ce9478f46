// Transformer assembly, the summed token loss, and the reference initialisation.
#include "model/transformer.h"

#include "model/linear.h"

namespace trainbench {

BlockImpl::BlockImpl(int64_t layer, const ModelConfig& c) {
    attn = register_module("attn", MLAAttention(c));
    if (layer < c.n_dense_layers) dense_ = register_module("ffn", MLP(c.dim, c.inter_dim));
    else moe_ = register_module("ffn", MoE(c));
    attn_norm = register_module("attn_norm", RMSNorm(c.dim));
    ffn_norm = register_module("ffn_norm", RMSNorm(c.dim));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux) {
    auto h = x + attn->forward(attn_norm(x), rotary);
    if (dense_) return h + dense_(ffn_norm(h));
    MoEOutput out = moe_->forward(ffn_norm(h));
    if (out.seq_aux.defined()) seq_aux = seq_aux.defined() ? seq_aux + out.seq_aux : out.seq_aux;
    return h + out.y;
}

TransformerImpl::TransformerImpl(const ModelConfig& c)
    : config_(c), rotary_(std::make_unique<RotaryTable>(c)) {
    embed = register_module("embed", torch::nn::Embedding(c.vocab_size, c.dim));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.n_layers; ++i) layers->push_back(Block(i, c));
    norm = register_module("norm", RMSNorm(c.dim));
    head = register_module("head", plainLinear(c.dim, c.vocab_size));
}

torch::Tensor TransformerImpl::hidden(const torch::Tensor& tokens, torch::Tensor& seq_aux) {
    auto h = embed(tokens);  // [B, T, d]
    const bool recompute = recompute_blocks_ && torch::GradMode::is_enabled() && is_training();
    for (const auto& layer : *layers) {
        auto* block = layer->as<BlockImpl>();
        h = recompute ? block->recomputedForward(h, *rotary_, seq_aux) : block->forward(h, *rotary_, seq_aux);
    }
    return norm(h);
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens) {
    torch::Tensor seq_aux;
    return head(hidden(tokens, seq_aux));
}

LossParts TransformerImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
    torch::Tensor seq_aux;  // [B]
    auto logits = head(hidden(tokens, seq_aux));  // [B, T, V]
    auto compute = logits.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    auto flat_targets = targets.reshape({-1});
    auto counted = flat_targets.ne(kIgnoreIndex);
    auto sum = torch::nn::functional::cross_entropy(
        logits.reshape({-1, config_.vocab_size}).to(compute), flat_targets,
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex).reduction(torch::kSum));
    LossParts parts{sum, counted.sum(), torch::zeros({}, sum.options())};
    if (seq_aux.defined()) {
        // Each sequence's balance loss weighs as many targets as it counts, so the trainer's
        // division by the global token count makes it a token-weighted mean like the main loss.
        auto per_row = targets.ne(kIgnoreIndex).sum(1).to(seq_aux.scalar_type());  // [B]
        parts.aux_loss_sum = (seq_aux * per_row).sum();
    }
    return parts;
}

std::vector<MoE> TransformerImpl::moeLayers() const {
    std::vector<MoE> out;
    for (const auto& layer : *layers) {
        auto moe = layer->as<BlockImpl>()->moe();
        if (moe) out.push_back(moe);
    }
    return out;
}

std::vector<int64_t> TransformerImpl::moeLayerIndices() const {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < static_cast<int64_t>(layers->size()); ++i)
        if (layers->ptr<BlockImpl>(i)->moe()) out.push_back(i);
    return out;
}

void initializeWeights(Transformer& model, uint64_t seed) {
    torch::NoGradGuard no_grad;
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    const double std_dev = model->config().init_std;
    for (auto& item : model->named_parameters()) {
        const std::string& name = item.key();
        auto& p = item.value();
        bool is_norm = name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
        if (is_norm) {
            p.fill_(1.0);
            continue;
        }
        auto values = torch::empty(p.sizes(), torch::kFloat32);
        values.normal_(0.0, std_dev, generator);
        p.copy_(values);
    }
    for (auto& item : model->named_buffers()) item.value().zero_();
}

std::vector<std::pair<std::string, torch::Tensor>> stateDict(const Transformer& model) {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto& item : model->named_parameters()) out.emplace_back(item.key(), item.value());
    for (const auto& item : model->named_buffers()) out.emplace_back(item.key(), item.value());
    return out;
}

}  // namespace trainbench
