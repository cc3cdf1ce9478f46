// How the memory plan reads in words: the budget bar's share, the planner's "what fits" on the target, the step time's terms and this machine's measured rates.
#pragma once

#include <QString>

#include <cstdint>

#include "trainbench/machine_probe.h"
#include "trainbench/memory_plan.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

// The budget bar's text: a percentage up to twice the budget, a multiple beyond. `what` names
// what the bar measures ("peak" unless given).
QString formatShareOfBudget(double share, const QString& what = QString());
// "stage 2, recompute full, m 4", with the experts' division and the offload when there are
// (without the m where it has a place of its own).
QString describeMemoryLayout(const MemoryLayout& layout, bool with_micro_batch = true);
// The planner's "what fits" in a sentence: the cheapest layout on `world_size` ranks and the
// fewest ranks at m 1.
QString describeLayoutAdvice(const LayoutAdvice& advice, int64_t world_size);
// adviseOnTarget's answer for `config` on `target`: describeLayoutAdvice's while a layout fits
// without offload; else the offloaded layout with its peak, a node's host memory and NVMe and
// its predicted step time, or why nothing fits (TargetAdvice::why_none).
QString describeTargetAdvice(const TargetAdvice& advice, const RunConfig& config, const TargetMachine& target);
// The step time's terms, one line each (what `plan` prints under its step-time line), for a
// tooltip.
QString describeStepTimeTerms(const StepTimePlan& time, int64_t gradient_accumulation_steps);

// Where the window's order matters (the weights streamed to the device, blocks recomputed): the
// order `plan` runs and the other one's prediction beside it, e.g. "by unit (weights twice a
// window); by micro-batch: predicted 17.4 min per step, ...". `other_fits` false: the other does not fit.
QString describeWindowOrders(const MemoryPlan& plan, const StepTimePlan& other_time, bool other_fits);
// What the machine probe measured, for the line under the step time: "measured: host copy
// 38 GB/s, CPU 1.2 TFLOP/s fp32 (2 threads)", and the directory's rates when it probed one.
QString describeMachineFigures(const MachineProbe& probe);

}  // namespace trainbench::gui
