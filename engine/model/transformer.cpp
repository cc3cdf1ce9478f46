// Transformer assembly, the summed token loss, and the reference initialisation.
#include "model/transformer.h"

#include <stdexcept>

#include "model/backward_boundary.h"
#include "model/chunked_head_loss.h"
#include "model/linear.h"
#include "model/mtp_module.h"
#include "trainbench/head_chunk.h"

namespace trainbench {

TransformerImpl::TransformerImpl(const ModelConfig& c)
    : config_(c), rotary_(std::make_unique<RotaryTable>(c)) {
    embed = register_module("embed", torch::nn::Embedding(c.vocab_size, c.dim));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.n_layers; ++i) layers->push_back(Block(i, c));
    norm = register_module("norm", RMSNorm(c.dim));
    head = register_module("head", plainLinear(c.dim, c.vocab_size));
    if (c.n_mtp_depth > 0) {
        mtp = register_module("mtp", torch::nn::ModuleList());
        for (int64_t k = 0; k < c.n_mtp_depth; ++k) mtp->push_back(MtpModule(c.n_layers + k, c));
    }
}

torch::Tensor trainingObjective(const LossParts& parts, const torch::Tensor& mtp_weights) {
    torch::Tensor objective = parts.token_loss_sum + parts.aux_loss_sum;
    if (!parts.mtp_loss_sums.defined()) return objective;
    if (!mtp_weights.defined()) throw std::logic_error("trainingObjective: depth losses without the window's weights");
    const auto weights = mtp_weights.to(parts.mtp_loss_sums.device(), parts.mtp_loss_sums.scalar_type());
    return objective + (parts.mtp_loss_sums * weights).sum();
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

torch::Tensor TransformerImpl::blockStep(BlockImpl& block, const torch::Tensor& x, torch::Tensor& aux) {
    const bool graph = torch::GradMode::is_enabled() && is_training();
    if (graph && recomputation_ == Recomputation::Full)
        return block.recomputedForward(BlockImpl::Part::Whole, x, *rotary_, aux);
    if (graph && recomputation_ == Recomputation::Feedforward) {
        auto h = block.forwardPart(BlockImpl::Part::Attention, x, *rotary_, aux);
        return block.recomputedForward(BlockImpl::Part::FeedForward, h, *rotary_, aux);
    }
    return block.forward(x, *rotary_, aux);
}

torch::Tensor TransformerImpl::hiddenStates(const torch::Tensor& tokens, torch::Tensor& seq_aux, torch::Tensor& embedded) {
    const bool recompute = torch::GradMode::is_enabled() && is_training() && recomputation_ == Recomputation::Full;
    enterUnit(0);
    embedded = leaveUnit(0, {embed(tokens)})[0];  // [B, T, d]
    auto h = embedded;
    for (size_t i = 0; i < layers->size(); ++i) {
        BlockImpl* block = layers->ptr<BlockImpl>(i).get();
        const int64_t unit = static_cast<int64_t>(i) + 1;
        torch::Tensor aux;  // this block's balance loss per sequence
        enterUnit(unit);
        h = blockStep(*block, h, aux);
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
    torch::Tensor seq_aux, embedded;
    auto h = hiddenStates(tokens, seq_aux, embedded);
    const int64_t head_unit = unitCount() - 1;
    enterUnit(head_unit);
    return leaveUnit(head_unit, {projectOutsideFp8(head, norm(h))})[0];
}

LossParts TransformerImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets, bool with_mtp) {
    torch::Tensor seq_aux, embedded;  // [B]; [B, T, d]
    auto h = hiddenStates(tokens, seq_aux, embedded);
    const int64_t head_unit = unitCount() - 1;
    enterUnit(head_unit);
    torch::Tensor mtp_aux_sum;
    LossParts parts = headParts(h, embedded, targets, seq_aux, with_mtp, mtp_aux_sum);
    // (the blocks' balance losses come from their units: only what the head unit computed passes
    // its boundary)
    if (!parts.mtp_loss_sums.defined()) {
        parts.token_loss_sum = leaveUnit(head_unit, {parts.token_loss_sum})[0];
        return parts;
    }
    auto out = leaveUnit(head_unit, {parts.token_loss_sum, parts.mtp_loss_sums, mtp_aux_sum});
    parts.token_loss_sum = out[0];
    parts.mtp_loss_sums = out[1];
    parts.aux_loss_sum = parts.aux_loss_sum + out[2];
    return parts;
}

torch::Tensor TransformerImpl::headLossSum(const torch::Tensor& x, const torch::Tensor& targets) {
    const int64_t chunk = headChunkRows(config_, head_chunk_tokens_, targets.numel());
    if (chunk > 0)
        return chunkedHeadLoss(x.reshape({-1, config_.dim}), head->weight, targets.reshape({-1}), kIgnoreIndex, chunk);
    const torch::Tensor logits = projectOutsideFp8(head, x);  // [..., V]
    const auto compute = logits.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    return torch::nn::functional::cross_entropy(
        logits.reshape({-1, config_.vocab_size}).to(compute), targets.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex).reduction(torch::kSum));
}

namespace {

// Each sequence's balance loss weighs as many targets as it counts, so the trainer's division
// by the global token count makes it a token-weighted mean like the main loss.
torch::Tensor tokenWeightedAux(const torch::Tensor& seq_aux, const torch::Tensor& targets) {
    auto per_row = targets.ne(kIgnoreIndex).sum(1).to(seq_aux.scalar_type());  // [B]
    return (seq_aux * per_row).sum();
}

}  // namespace

LossParts TransformerImpl::headParts(const torch::Tensor& h, const torch::Tensor& embedded, const torch::Tensor& targets,
                                     const torch::Tensor& seq_aux, bool with_mtp, torch::Tensor& mtp_aux_sum) {
    const torch::Tensor sum = headLossSum(norm(h), targets);
    LossParts parts{sum, targets.ne(kIgnoreIndex).sum(), torch::zeros({}, sum.options())};
    if (seq_aux.defined()) parts.aux_loss_sum = tokenWeightedAux(seq_aux, targets);
    if (with_mtp && mtp) {
        torch::Tensor mtp_aux;
        mtpLosses(h, embedded, targets, parts, mtp_aux);
        mtp_aux_sum = mtp_aux.defined() ? tokenWeightedAux(mtp_aux, targets) : torch::zeros({}, sum.options());
    }
    return parts;
}

void TransformerImpl::mtpLosses(const torch::Tensor& h, const torch::Tensor& embedded, const torch::Tensor& targets,
                                LossParts& parts, torch::Tensor& mtp_aux) {
    const int64_t T = targets.size(1);
    std::vector<torch::Tensor> sums, counts;
    torch::Tensor previous = h;  // h^{k-1}: the main model's for k = 1
    for (int64_t k = 1; k <= mtpDepth(); ++k) {
        const int64_t S = T - k;  // positions i whose target t_{i+k+1} lies in the sequence
        if (S <= 0) {
            sums.push_back(torch::zeros({}, parts.token_loss_sum.options()));
            counts.push_back(torch::zeros({}, parts.token_count.options()));
            continue;
        }
        MtpModuleImpl& module = *mtp->ptr<MtpModuleImpl>(k - 1);
        torch::Tensor aux;
        previous = blockStep(module, module.join(embedded.narrow(1, k, S), previous.narrow(1, 0, S)), aux);
        if (aux.defined()) mtp_aux = mtp_aux.defined() ? mtp_aux + aux : aux;
        const torch::Tensor depth_targets = mtpTargets(targets, k);
        sums.push_back(headLossSum(module.finalNorm(previous), depth_targets).to(parts.token_loss_sum.scalar_type()));
        counts.push_back(depth_targets.ne(kIgnoreIndex).sum());
    }
    parts.mtp_loss_sums = torch::stack(sums);
    parts.mtp_token_counts = torch::stack(counts);
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

LossParts TransformerImpl::headLoss(const torch::Tensor& h, const torch::Tensor& embedded, const torch::Tensor& targets,
                                    const std::vector<torch::Tensor>& auxes) {
    // hiddenStates()'s order: seq_aux = ((a_1 + a_2) + a_3) ...
    torch::Tensor seq_aux;
    for (const auto& aux : auxes)
        if (aux.defined()) seq_aux = seq_aux.defined() ? seq_aux + aux : aux;
    torch::Tensor mtp_aux_sum;
    LossParts parts = headParts(h, embedded, targets, seq_aux, true, mtp_aux_sum);
    if (parts.mtp_loss_sums.defined()) parts.aux_loss_sum = parts.aux_loss_sum + mtp_aux_sum;  // as loss() adds it
    return parts;
}

std::vector<std::vector<torch::Tensor>> TransformerImpl::units() const {
    std::vector<std::vector<torch::Tensor>> out{embed->parameters()};
    for (const auto& layer : *layers) out.push_back(layer->parameters());
    std::vector<torch::Tensor> last = norm->parameters();
    for (auto& p : head->parameters()) last.push_back(p);
    if (mtp)
        for (auto& p : mtp->parameters()) last.push_back(p);
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
    if (mtp)
        for (const auto& module : *mtp)
            if (auto moe = module->as<MtpModuleImpl>()->moe()) out.push_back(moe);
    return out;
}

std::vector<int64_t> TransformerImpl::moeLayerIndices() const {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < static_cast<int64_t>(layers->size()); ++i)
        if (layers->ptr<BlockImpl>(i)->moe()) out.push_back(i);
    // The modules under their published layer numbers, after the main model's.
    for (int64_t k = 0; k < mtpDepth(); ++k)
        if (mtp->ptr<MtpModuleImpl>(k)->moe()) out.push_back(static_cast<int64_t>(layers->size()) + k);
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

KvCache TransformerImpl::newCache(int64_t rows, CacheForm form) const {
    KvCache cache;
    cache.form = form;
    cache.rows = rows;
    cache.capacity = config_.max_seq_len;
    cache.layers.resize(layers->size() + mtpDepth());
    return cache;
}

torch::Tensor TransformerImpl::decode(const torch::Tensor& tokens, KvCache& cache, const std::vector<int64_t>& rows,
                                      const std::vector<int64_t>& starts, LogitRows logit_rows, torch::Tensor* hidden) {
    torch::NoGradGuard no_grad;
    auto h = embed(tokens);
    for (size_t i = 0; i < layers->size(); ++i)
        h = layers->ptr<BlockImpl>(i)->decode(h, *rotary_, cache, cache.layers[i], rows, starts);
    if (logit_rows == LogitRows::Last) h = h.narrow(1, h.size(1) - 1, 1);
    if (hidden) *hidden = h;
    return projectOutsideFp8(head, norm(h));
}

torch::Tensor TransformerImpl::decodeMtp(int64_t k, const torch::Tensor& next_tokens, const torch::Tensor& previous,
                                         KvCache& cache, const std::vector<int64_t>& rows,
                                         const std::vector<int64_t>& starts, torch::Tensor* hidden) {
    torch::NoGradGuard no_grad;
    MtpModuleImpl& module = mtpModule(k);
    auto h = module.decode(module.join(embed(next_tokens), previous), *rotary_, cache,
                           cache.layers[layers->size() + k], rows, starts);
    if (hidden) *hidden = h;
    return projectOutsideFp8(head, module.finalNorm(h));
}

std::pair<torch::Tensor, torch::Tensor> TransformerImpl::trunk(const torch::Tensor& tokens) {
    torch::NoGradGuard no_grad;
    torch::Tensor seq_aux, embedded;
    auto h = hiddenStates(tokens, seq_aux, embedded);
    return {h, embedded};
}

MtpModuleImpl& TransformerImpl::mtpModule(int64_t k) {
    if (k < 0 || k >= mtpDepth()) throw std::out_of_range("no multi-token-prediction module " + std::to_string(k));
    return *mtp->ptr<MtpModuleImpl>(k);
}

}  // namespace trainbench
