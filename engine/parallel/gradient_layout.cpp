#include "parallel/gradient_layout.h"

#include "parallel/expert_parallel_layout.h"
#include "parallel/replicated_layout.h"
#include "parallel/sharded_layout.h"

namespace trainbench {

std::unique_ptr<GradientLayout> makeGradientLayout(const LayoutSetup& setup, Transformer& model,
                                                   const NamedTensors* resumed_optimizer) {
    // The one place that reads the layout off the config.
    if (setup.expert_collectives) return std::make_unique<ExpertParallelLayout>(setup, model, resumed_optimizer);
    if (setup.config->runtime.zero_stage >= 1) return std::make_unique<ShardedLayout>(setup, model, resumed_optimizer);
    return std::make_unique<ReplicatedLayout>(setup, model, resumed_optimizer);
}

}  // namespace trainbench
