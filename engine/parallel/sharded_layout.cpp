#include "parallel/sharded_layout.h"

#include "parallel/adamw_state.h"

namespace trainbench {

ShardedLayout::ShardedLayout(const LayoutSetup& setup, Transformer model, const NamedTensors* resumed_optimizer)
    : PartLayout(setup, std::move(model)) {
    parts_.push_back(std::make_unique<ParameterPart>(specFor(allParameters(), *setup_.collectives, setup_.rank, true),
                                                     model_, setup_.config->train, resumed_optimizer));
    if (part().weights()) model_->setWeightResidency(part().weights());
}

CheckpointTensors ShardedLayout::gatherCheckpoint() {
    // Every rank takes part in the gathers (the moments, then stage 3's weights); rank 0 gets them.
    CheckpointTensors out = gatherFirstPart(parameterNames(model_));
    if (!part().weights() && setup_.rank == 0) out.model = stateDict(model_);
    return out;
}

}  // namespace trainbench
