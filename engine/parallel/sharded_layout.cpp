#include "parallel/sharded_layout.h"

#include <unordered_map>

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
    std::vector<torch::Tensor> master(names.size());
    part().masterWeightsInto(master, /*every_rank=*/false);
    if (setup_.rank != 0) return out;
    std::unordered_map<std::string, torch::Tensor> by_name;
    for (size_t i = 0; i < names.size(); ++i)
        if (master[i].defined()) by_name.emplace(names[i], master[i]);
    out.model = stateDict(model_);
    for (auto& [name, tensor] : out.model)
        if (auto found = by_name.find(name); found != by_name.end()) tensor = found->second;
    return out;
}

}  // namespace trainbench
