#include "parallel/expert_parallel_layout.h"

#include <unordered_set>

#include "model/expert_parallel.h"
#include "parallel/adamw_state.h"
#include "parallel/replicated_layout.h"

namespace trainbench {

ExpertParallelLayout::ExpertParallelLayout(const LayoutSetup& setup, Transformer model,
                                           const NamedTensors* resumed_optimizer)
    : PartLayout(setup, std::move(model)) {
    const RunConfig& cfg = *setup_.config;
    ExpertParallel ep;
    ep.group = setup_.expert_collectives;
    ep.size = static_cast<int>(cfg.runtime.expert_parallel);
    ep.rank = setup_.rank % ep.size;
    ep.experts_per_rank = cfg.model.n_routed_experts / ep.size;
    for (auto& moe : model_->moeLayers()) moe->distribute(ep);
    // From here on this rank holds its own experts only: the saved state restores by name.
    const bool sharded = setup.placement.sharded.moments;
    if (!sharded) {
        optimizer_ = makeAdamW(model_, cfg.train);
        if (resumed_optimizer) restoreOptimizer(model_, *optimizer_, *resumed_optimizer, optimizerDtype(cfg.runtime));
    }
    // The replicated weights' gradients sum over every rank, the experts' over the ranks that
    // hold the same experts only; at stages 1-3 each set's state is sharded over its own ranks.
    std::unordered_set<const void*> routed;
    for (auto& moe : model_->moeLayers())
        for (const auto& p : moe->routedExpertParameters()) routed.insert(p.unsafeGetTensorImpl());
    const auto params = model_->parameters();
    std::vector<size_t> dense_part, expert_part;
    for (size_t i = 0; i < params.size(); ++i) {
        is_routed_.push_back(routed.count(params[i].unsafeGetTensorImpl()) ? 1 : 0);
        (is_routed_.back() ? expert_part : dense_part).push_back(i);
    }
    const NamedTensors* resumed_slices = sharded ? resumed_optimizer : nullptr;
    parts_.push_back(std::make_unique<ParameterPart>(specFor(dense_part, *setup_.collectives, setup_.rank, true, "dense"), model_,
                                                     cfg.train, resumed_slices));
    Collectives& replicas = *setup_.replica_collectives;
    parts_.push_back(std::make_unique<ParameterPart>(specFor(expert_part, replicas, replicas.rank(), false, "experts"), model_,
                                                     cfg.train, resumed_slices));
    if (dense().weights()) {
        paired_residency_ = std::make_unique<PairedResidency>(*dense().weights(), *experts().weights());
        model_->setWeightResidency(paired_residency_.get());
    }
    routed_mask_ = torch::tensor(std::vector<double>(is_routed_.begin(), is_routed_.end()), torch::kFloat64).to(setup_.device);
}

GroupSquares ExpertParallelLayout::groupSquares(const std::vector<int>& group_of_param, int64_t groups) {
    torch::Tensor squares, routed_sq;
    if (dense().sharded()) {
        squares = shardedSquares(group_of_param, groups);
        // The experts' slices: over the ranks holding the same experts, then over the group.
        std::vector<torch::Tensor> list{experts().sliceSquares(group_of_param, groups, setup_.device)};
        setup_.replica_collectives->allReduce(list, ReduceOp::Sum);
        setup_.expert_collectives->allReduce(list, ReduceOp::Sum);
        squares = squares + list[0];
        routed_sq = list[0].sum().view({1});
    } else {
        // Each rank of an expert group holds other experts: theirs summed over the group.
        const auto per_param = squaredGradientNorms(model_);
        auto expert_sq = sumPerGroup(per_param * routed_mask_, group_index_, group_of_param, groups);
        std::vector<torch::Tensor> list{expert_sq};
        setup_.expert_collectives->allReduce(list, ReduceOp::Sum);
        squares = sumPerGroup(per_param * (1 - routed_mask_), group_index_, group_of_param, groups);
        squares += expert_sq;
        routed_sq = expert_sq.sum().view({1});
    }
    return {squares, routed_sq};
}

void ExpertParallelLayout::step(double lr, double grad_divisor) {
    if (optimizer_) return replicatedStep(*optimizer_, lr, grad_divisor, optimizerDtype(setup_.config->runtime));
    dense().stepSlices(lr, grad_divisor);
    experts().stepSlices(lr, grad_divisor);
}

CheckpointTensors ExpertParallelLayout::gatherCheckpoint() {
    const std::vector<std::string> names = parameterNames(model_);
    CheckpointTensors out = gatherFirstPart(names);
    // At stage 1 the ranks holding the same experts first gather their moments (the first of
    // them, ranks 0 to EP - 1, gets them); at stage 3 their weights too. Then rank 0's expert
    // group gathers every expert, weights and moments.
    NamedTensors expert_moments, expert_weights, masters;
    if (!experts().weights()) masters = stateDictWithMasters(names);  // collective in each part's group
    if (experts().sharded()) expert_moments = experts().gatherMoments(names);
    if (experts().weights()) expert_weights = experts().gatherWeights(names);
    if (setup_.rank < setup_.config->runtime.expert_parallel) {
        if (experts().weights()) {
            for (auto& item : gatherExperts(expert_weights)) out.model.push_back(std::move(item));
        } else {
            // (bf16 device weights: the dense ones' master on rank 0, each expert's on the first
            // of its replicas, ranks 0 to EP - 1, the ranks gathering here)
            out.model = gatherExperts(masters);
        }
        if (experts().sharded()) {
            for (auto& item : gatherExperts(expert_moments)) out.optimizer.push_back(std::move(item));
        } else {
            out.optimizer = gatherExperts(adamWState(model_, *optimizer_));
        }
    }
    return out;
}

NamedTensors ExpertParallelLayout::gatherExperts(const NamedTensors& local) const {
    const RunConfig& cfg = *setup_.config;
    const int EP = static_cast<int>(cfg.runtime.expert_parallel);
    const int64_t per_rank = cfg.model.n_routed_experts / EP, first = (setup_.rank % EP) * per_rank;
    NamedTensors whole;
    for (const auto& [name, tensor] : local) {
        // "...experts.<e>...." names a routed expert; everything else is the same on every rank.
        const size_t at = name.find(".experts.");
        if (at == std::string::npos) {
            whole.emplace_back(name, tensor);
            continue;
        }
        const size_t digits = at + 9, end = name.find('.', digits);
        const int64_t local_index = std::stoll(name.substr(digits, end - digits)) - first;
        auto flat = tensor.detach().reshape({-1}).contiguous();
        auto all = torch::empty({EP * flat.numel()}, flat.options());
        setup_.expert_collectives->allGatherAsync(flat, all)->wait();
        for (int r = 0; r < EP; ++r)
            whole.emplace_back(name.substr(0, digits) + std::to_string(r * per_rank + local_index) + name.substr(end),
                               all.narrow(0, r * flat.numel(), flat.numel()).view(tensor.sizes()));
    }
    return whole;
}

}  // namespace trainbench
