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
    const std::vector<std::string> names = parameterNames(model_);
    CheckpointTensors out = gatherFirstPart(names);
    if (part().weights()) return out;
    // Weights held in bf16 on the device are written from their fp32 master (collective).
    NamedTensors model = stateDictWithMasters(names);
    if (setup_.rank == 0) out.model = std::move(model);
    return out;
}

}  // namespace trainbench
