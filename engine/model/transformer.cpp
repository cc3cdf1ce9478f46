// Transformer assembly, the summed token loss, and the reference initialisation.
#include "model/transformer.h"

#include "model/backward_boundary.h"
#include "model/chunked_head_loss.h"
#include "model/linear.h"
#include "trainbench/head_chunk.h"

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

TransformerImpl::TransformerImpl(const ModelConfig& c)
    : config_(c), rotary_(std::make_unique<RotaryTable>(c)) {
    embed = register_module("embed", torch::nn::Embedding(c.vocab_size, c.dim));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.n_layers; ++i) layers->push_back(Block(i, c));
    norm = register_module("norm", RMSNorm(c.dim));
    head = register_module("head", plainLinear(c.dim, c.vocab_size));
}

// Each unit's weights are whole from just before its forward to just after it; a boundary on
// its outputs brings them back for its backward (a recomputed block asks for them itself).
void TransformerImpl::enterUnit(int64_t unit) {
    if (residency_) residency_->beforeForward(unit);
}

torch::autograd::variable_list TransformerImpl::leaveUnit(int64_t unit, torch::autograd::variable_list outputs) {
    if (!residency_) return outputs;
    residency_->afterForward(unit);
    return backwardBoundary(outputs, *residency_, unit);
}

torch::Tensor TransformerImpl::hiddenStates(const torch::Tensor& tokens, torch::Tensor& seq_aux) {
    const bool graph = torch::GradMode::is_enabled() && is_training();
    const bool recompute = graph && recomputation_ == Recomputation::Full;
    const bool recompute_feedforward = graph && recomputation_ == Recomputation::Feedforward;
    enterUnit(0);
    auto h = leaveUnit(0, {embed(tokens)})[0];  // [B, T, d]
    for (size_t i = 0; i < layers->size(); ++i) {
        BlockImpl* block = layers->ptr<BlockImpl>(i).get();
        const int64_t unit = static_cast<int64_t>(i) + 1;
        torch::Tensor aux;  // this block's balance loss per sequence
        enterUnit(unit);
        if (recompute) {
            h = block->recomputedForward(BlockImpl::Part::Whole, h, *rotary_, aux);
        } else if (recompute_feedforward) {
            h = block->forwardPart(BlockImpl::Part::Attention, h, *rotary_, aux);
            h = block->recomputedForward(BlockImpl::Part::FeedForward, h, *rotary_, aux);
        } else {
            h = block->forward(h, *rotary_, aux);
        }
        if (residency_ && !recompute) {
            auto out = leaveUnit(unit, aux.defined() ? torch::autograd::variable_list{h, aux} : torch::autograd::variable_list{h});
            h = out[0];
            if (aux.defined()) aux = out[1];
        } else if (residency_) {
            residency_->afterForward(unit);
        }
        if (aux.defined()) seq_aux = seq_aux.defined() ? seq_aux + aux : aux;
    }
    return h;
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens) {
    torch::Tensor seq_aux;
    auto h = hiddenStates(tokens, seq_aux);
    const int64_t head_unit = unitCount() - 1;
    enterUnit(head_unit);
    return leaveUnit(head_unit, {projectOutsideFp8(head, norm(h))})[0];
}

LossParts TransformerImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
    torch::Tensor seq_aux;  // [B]
    auto h = hiddenStates(tokens, seq_aux);
    const int64_t head_unit = unitCount() - 1;
    enterUnit(head_unit);
    LossParts parts = headParts(h, targets, seq_aux);
    // (the balance losses come from the blocks: only the token loss passes the head's boundary)
    parts.token_loss_sum = leaveUnit(head_unit, {parts.token_loss_sum})[0];
    return parts;
}

LossParts TransformerImpl::headParts(const torch::Tensor& h, const torch::Tensor& targets, const torch::Tensor& seq_aux) {
    const torch::Tensor x = norm(h);  // [B, T, d]
    const int64_t chunk = headChunkRows(config_, head_chunk_tokens_, targets.numel());
    torch::Tensor sum;
    if (chunk > 0) {
        sum = chunkedHeadLoss(x.reshape({-1, config_.dim}), head->weight, targets.reshape({-1}), kIgnoreIndex, chunk);
    } else {
        const torch::Tensor logits = projectOutsideFp8(head, x);  // [B, T, V]
        const auto compute = logits.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
        sum = torch::nn::functional::cross_entropy(
            logits.reshape({-1, config_.vocab_size}).to(compute), targets.reshape({-1}),
            torch::nn::functional::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex).reduction(torch::kSum));
    }
    LossParts parts{sum, targets.ne(kIgnoreIndex).sum(), torch::zeros({}, sum.options())};
    if (seq_aux.defined()) {
        // Each sequence's balance loss weighs as many targets as it counts, so the trainer's
        // division by the global token count makes it a token-weighted mean like the main loss.
        auto per_row = targets.ne(kIgnoreIndex).sum(1).to(seq_aux.scalar_type());  // [B]
        parts.aux_loss_sum = (seq_aux * per_row).sum();
    }
    return parts;
}

torch::Tensor TransformerImpl::blockForward(int64_t unit, const torch::Tensor& x, torch::Tensor& aux) {
    torch::NoGradGuard no_graph;  // as inside a recomputed block's first forward
    return layers->ptr<BlockImpl>(unit - 1)->forwardPart(BlockImpl::Part::Whole, x, *rotary_, aux);
}

torch::Tensor TransformerImpl::blockBackward(int64_t unit, const torch::Tensor& x, const torch::Tensor& grad_y,
                                             const torch::Tensor& grad_aux, ComputePrecision precision) {
    return layers->ptr<BlockImpl>(unit - 1)->recomputedBackward(BlockImpl::Part::Whole, x, *rotary_, grad_y, grad_aux,
                                                                precision);
}

LossParts TransformerImpl::headLoss(const torch::Tensor& h, const torch::Tensor& targets,
                                    const std::vector<torch::Tensor>& auxes) {
    // hiddenStates()'s order: seq_aux = ((a_1 + a_2) + a_3) ...
    torch::Tensor seq_aux;
    for (const auto& aux : auxes)
        if (aux.defined()) seq_aux = seq_aux.defined() ? seq_aux + aux : aux;
    return headParts(h, targets, seq_aux);
}

std::vector<std::vector<torch::Tensor>> TransformerImpl::units() const {
    std::vector<std::vector<torch::Tensor>> out{embed->parameters()};
    for (const auto& layer : *layers) out.push_back(layer->parameters());
    std::vector<torch::Tensor> last = norm->parameters();
    for (auto& p : head->parameters()) last.push_back(p);
    out.push_back(std::move(last));
    return out;
}

void TransformerImpl::setWeightResidency(WeightResidency* residency) {
    residency_ = residency;
    for (size_t i = 0; i < layers->size(); ++i) layers->ptr<BlockImpl>(i)->residesIn(residency, static_cast<int64_t>(i) + 1);
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

namespace trainbench {

torch::Tensor BlockImpl::decode(const torch::Tensor& x, RotaryTable& rotary, KvCache& cache, LayerCache& layer,
                                const std::vector<int64_t>& rows, const std::vector<int64_t>& starts) {
    auto h = x + attn->decode(attn_norm(x), rotary, cache, layer, rows, starts);
    torch::Tensor unused;  // the balance loss: training only
    return forwardPart(Part::FeedForward, h, rotary, unused);
}

KvCache TransformerImpl::newCache(int64_t rows, CacheForm form) const {
    KvCache cache;
    cache.form = form;
    cache.rows = rows;
    cache.capacity = config_.max_seq_len;
    cache.layers.resize(layers->size());
    return cache;
}

torch::Tensor TransformerImpl::decode(const torch::Tensor& tokens, KvCache& cache, const std::vector<int64_t>& rows,
                                      const std::vector<int64_t>& starts, LogitRows logit_rows) {
    torch::NoGradGuard no_grad;
    auto h = embed(tokens);
    for (size_t i = 0; i < layers->size(); ++i)
        h = layers->ptr<BlockImpl>(i)->decode(h, *rotary_, cache, cache.layers[i], rows, starts);
    if (logit_rows == LogitRows::Last) h = h.narrow(1, h.size(1) - 1, 1);
    return projectOutsideFp8(head, norm(h));
}

}  // namespace trainbench
