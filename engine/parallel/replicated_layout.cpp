#include "parallel/replicated_layout.h"

#include "parallel/adamw_state.h"
#include "parallel/fused_adamw.h"

namespace trainbench {

ReplicatedLayout::ReplicatedLayout(const LayoutSetup& setup, Transformer model, const NamedTensors* resumed_optimizer)
    : PartLayout(setup, std::move(model)) {
    optimizer_ = makeAdamW(model_, setup_.config->train);
    if (resumed_optimizer) restoreOptimizer(model_, *optimizer_, *resumed_optimizer, optimizerDtype(setup_.config->runtime));
    parts_.push_back(std::make_unique<ParameterPart>(specFor(allParameters(), *setup_.collectives, setup_.rank, true),
                                                     model_, setup_.config->train, nullptr));
}

torch::Tensor squaredGradientNorms(Transformer& model) {
    // Each tensor's norm in its own dtype (asking for fp64 would first copy every gradient to
    // doubles), then squared in fp64.
    std::vector<torch::Tensor> grads;
    for (auto& p : model->parameters()) grads.push_back(p.grad());
    return torch::stack(at::_foreach_norm(grads, 2)).to(torch::kFloat64).square();
}

torch::Tensor sumPerGroup(const torch::Tensor& per_param, torch::Tensor& group_index, const std::vector<int>& group_of_param,
                          int64_t groups) {
    if (!group_index.defined())
        group_index = torch::tensor(std::vector<int64_t>(group_of_param.begin(), group_of_param.end()), torch::kInt64)
                          .to(per_param.device());
    return torch::zeros({groups}, per_param.options()).index_add_(0, group_index, per_param);
}

void replicatedStep(torch::optim::AdamW& optimizer, double lr, double grad_divisor, OptimizerDtype moments) {
    for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    fusedAdamWStep(optimizer, grad_divisor, moments);
}

GroupSquares ReplicatedLayout::groupSquares(const std::vector<int>& group_of_param, int64_t groups) {
    return {sumPerGroup(squaredGradientNorms(model_), group_index_, group_of_param, groups), {}};
}

void ReplicatedLayout::step(double lr, double grad_divisor) {
    replicatedStep(*optimizer_, lr, grad_divisor, optimizerDtype(setup_.config->runtime));
}

CheckpointTensors ReplicatedLayout::gatherCheckpoint() {
    CheckpointTensors out;
    if (setup_.rank != 0) return out;  // every rank holds it all; rank 0 writes
    out.model = stateDict(model_);
    out.optimizer = adamWState(model_, *optimizer_);
    return out;
}

}  // namespace trainbench
