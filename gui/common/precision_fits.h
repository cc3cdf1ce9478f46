// PrecisionFits: the planner's peak and largest fitting micro-batch under each precision (planPrecisions, planPrecisionsOnTarget: fp32, bf16, fp8, fp8 with bf16 moments), and how the workbench writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <QString>

#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

// planPrecisions' rows for one config and budget, and which of them is the config's own.
//
// The config's precision is runtime.dtype with runtime.optimizer_dtype; "auto" counts as what it
// resolves to on the devices planned for (resolveComputeDtype). A precision the planner does not
// list (fp32 or bf16 with bf16 moments) is planned the same way (planOnTarget or planMemory of
// the config with it) and added after the four, so the config's own row is always there.
struct PrecisionFits {
    std::vector<PrecisionFit> rows;
    int current = -1;     // rows' index of the config's precision
    bool budget = false;  // a budget was known: largest_micro_batch means "fits", not "configured"
    int64_t limit_bytes = 0;
    bool auto_dtype = false;  // runtime.dtype "auto", resolved to rows[current].dtype

    const PrecisionFit* currentFit() const { return current >= 0 ? &rows[size_t(current)] : nullptr; }
    // The row of this dtype and moments' storage, or nullptr.
    const PrecisionFit* find(const std::string& dtype, const std::string& optimizer_dtype) const;
};

// The planner's precisions for `config` as the batch panel plans it: on `target`, as planOnTarget
// plans (planPrecisionsOnTarget: the device budget, runtime.memory_limit_mb first, and the
// node's host memory and NVMe).
PrecisionFits precisionFitsOnTarget(const RunConfig& config, const TargetMachine& target);
// One precision of `config` on `target` as precisionFitsOnTarget plans it: the row of `fits`
// (precisionFitsOnTarget's for the same config and target) when it has it, else planned the same
// way. `dtype` "auto" resolves on the target's devices.
PrecisionFit precisionFitOnTarget(const RunConfig& config, const TargetMachine& target, const PrecisionFits& fits,
                                  const std::string& dtype, const std::string& optimizer_dtype);
// The same for this machine against `limit_bytes` (BatchPanel::memoryBudgetBytes): what the
// explorer measures against.
PrecisionFits precisionFits(const RunConfig& config, int64_t limit_bytes);

// "fp32", "bf16", "fp8", "fp8 + bf16 moments".
QString precisionName(const std::string& dtype, const std::string& optimizer_dtype);
QString precisionName(const PrecisionFit& fit);
// The largest m as a cell: "12", "none" (not even 1 fits); "—" without a budget.
QString largestMicroBatchText(const PrecisionFit& fit, bool budget);
// The change of `fit`'s largest m against `base`'s, in whole percent: "+31 %", "−50 %", "same";
// "fits" where base fits no m and fit does; empty without a budget or when neither fits.
QString largestMicroBatchChange(const PrecisionFit& fit, const PrecisionFit& base, bool budget);
// One line: "fp8: peak 3.10 GiB, largest m 12" ("..., peak 3.10 GiB at m 4" without a budget).
QString describePrecisionFit(const PrecisionFit& fit, bool budget);
// Every row on a line of its own, the config's own marked "(now)", after a head naming m:
// "At m 4 on this machine (cpu, 1 rank):\nfp32 (now): peak ..., largest m 8\n...".
QString describePrecisionFits(const PrecisionFits& fits, const QString& where);

}  // namespace trainbench::gui
