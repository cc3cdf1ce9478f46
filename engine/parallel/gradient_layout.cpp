#include "parallel/gradient_layout.h"

#include <stdexcept>
#include <string>

#include "parallel/expert_parallel_layout.h"
#include "parallel/replicated_layout.h"
#include "parallel/sharded_layout.h"

namespace trainbench {

std::unique_ptr<GradientLayout> makeGradientLayout(const LayoutSetup& setup, Transformer& model,
                                                   const NamedTensors* resumed_optimizer) {
    // A setup that forgot its placement would build another layout than the config's.
    if (setup.placement.sharded != shardingOf(setup.config->runtime.zero_stage))
        throw std::logic_error("LayoutSetup::placement shards otherwise than runtime.zero_stage " +
                               std::to_string(setup.config->runtime.zero_stage) +
                               ": set it with placementFor(config, ...)");
    // The one place that picks the layout: expert groups, or what the placement shards.
    if (setup.expert_collectives) return std::make_unique<ExpertParallelLayout>(setup, model, resumed_optimizer);
    if (setup.placement.sharded.moments) return std::make_unique<ShardedLayout>(setup, model, resumed_optimizer);
    return std::make_unique<ReplicatedLayout>(setup, model, resumed_optimizer);
}

}  // namespace trainbench
