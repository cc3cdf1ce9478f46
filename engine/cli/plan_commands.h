// The batch-fitting commands of trainbench-cli: `plan` and `explore`.
#pragma once

#include "trainbench/run_config.h"

namespace trainbench {

int commandPlan(const RunConfig& config, bool as_json);
// `over_layouts`: also over every sharding stage and recomputation mode (ExploreOptions).
int commandExplore(const RunConfig& config, int64_t steps_per_row, bool as_json, bool over_layouts);

}  // namespace trainbench
