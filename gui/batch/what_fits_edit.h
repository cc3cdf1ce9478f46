// WhatFitsEdit: what "Apply what fits" does to a config: the target's cheapest layout and m (adviseOnTarget) set through withLayout, as one edit.
#pragma once

#include <QString>

#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

// `config` is withLayout(config, advice.layout.cheapest): the stage, recomputation, expert
// parallelism, m (K keeping the global batch) and offload. Two cases add to that:
// - an EP that does not divide runtime.world_size (the target has more devices than runtime
//   ranks) would leave a config validation refuses: the ranks become the target's first
//   (runtime.world_size = target.devices), the split the plan on the target assumed;
// - a layout on NVMe when the config has no runtime.offload_dir: withLayout's placeholder
//   (kPlannedOffloadDir) stands there, and `note` asks the user for the directory.
// `applies` is false when nothing fits or the layout is the config's already; `note` says which.
struct WhatFitsEdit {
    RunConfig config;
    bool applies = false;
    bool ranks_from_target = false;
    QString description;  // the undo step: "Apply what fits: stage 0 with EP 8, recompute feedforward, m 1"
    QString note;         // what is left to the user, or why nothing applies
};

WhatFitsEdit whatFitsEdit(const RunConfig& config, const TargetAdvice& advice, const TargetMachine& target);

}  // namespace trainbench::gui
