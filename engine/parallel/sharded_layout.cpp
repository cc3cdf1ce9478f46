#include "parallel/sharded_layout.h"

#include "parallel/adamw_state.h"

namespace trainbench {

ShardedLayout::ShardedLayout(const LayoutSetup& setup, Transformer model, const NamedTensors* resumed_optimizer)
    : PartLayout(setup, std::move(model)) {
    parts_.push_back(std::make_unique<ParameterPart>(specFor(allParameters(), *setup_.collectives, setup_.rank, true),
                                                     model_, setup_.config->train, resumed_optimizer));
    if (part().weights()) model_->setWeightResidency(part().weights());
}

bool ShardedLayout::recoversFromOutOfMemory() const {
    return !(setup_.config->train.sync_each_micro_batch && setup_.world_size > 1);
}

GroupSquares ShardedLayout::groupSquares(const std::vector<int>& group_of_param, int64_t groups) {
    // Each rank holds the sums of its slices only: their squares, summed over the ranks.
    auto squares = part().sliceSquares(group_of_param, groups, setup_.device);
    if (setup_.world_size > 1) {
        std::vector<torch::Tensor> list{squares};
        setup_.collectives->allReduce(list, ReduceOp::Sum);
    }
    return {squares, {}};
}

CheckpointTensors ShardedLayout::gatherCheckpoint() {
    // Every rank takes part in the gathers (the moments, then stage 3's weights); rank 0 gets them.
    const std::vector<std::string> names = parameterNames(model_);
    CheckpointTensors out;
    out.optimizer = part().gatherMoments(names);
    if (part().weights()) {
        out.model = part().gatherWeights(names);
        for (const auto& item : model_->named_buffers()) out.model.emplace_back(item.key(), item.value());
    } else if (setup_.rank == 0) {
        out.model = stateDict(model_);
    }
    return out;
}

std::vector<torch::Tensor> ShardedLayout::wholeParameters() {
    if (!part().weights()) return clonedParameters();
    std::vector<torch::Tensor> out(model_->parameters().size());
    part().wholeParametersInto(out);
    return out;
}

}  // namespace trainbench
