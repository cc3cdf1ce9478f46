// The sizes of the units ZeRO stage 3 gathers whole (model/weight_residency.h), for the planner.
#pragma once

#include <cstdint>

#include "trainbench/param_count.h"
#include "trainbench/run_config.h"

namespace trainbench::units {

// The routed experts of one MoE layer (what expert parallelism divides).
int64_t routedPerLayer(const ModelConfig& c);

// The last unit: the final norm, the head and the multi-token-prediction modules (their MoE
// blocks with this rank's share of the routed experts; the gates' biases are buffers).
int64_t headUnitElements(const ModelConfig& c, const ParamCount& counts, int64_t expert_parallel);

// Elements of the largest unit: the embedding, a block, or the last unit. Under expert
// parallelism an MoE block holds its share of the routed experts only.
int64_t largestUnitElements(const ModelConfig& c, const ParamCount& counts, int64_t expert_parallel);

// Elements of the two units next to each other in the backward's order (the last unit, the
// blocks last first, the embedding) that are largest together: at stage 2 a unit's gradients
// are in flight, whole, while the next unit's fill their bucket.
int64_t largestAdjacentUnitsElements(const ModelConfig& c, const ParamCount& counts, int64_t expert_parallel);

}  // namespace trainbench::units
