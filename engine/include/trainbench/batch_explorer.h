// The batch explorer: every split m x K of one global batch, trained for a few steps and
// measured, with the planner's estimate beside each, and a recommendation.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainbench/live_advice.h"
#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"

namespace trainbench {

struct ExploreRow {
    // The memory layout measured (the config's own unless the exploration is over layouts).
    int64_t zero_stage = 0;
    std::string activation_checkpointing = "none";
    int64_t expert_parallel = 1;
    std::string offload = "none";      // runtime.offload (to the config's runtime.offload_dir when set)
    int64_t micro_batch_size = 0;
    int64_t gradient_accumulation_steps = 0;
    double tokens_per_s = 0;           // mean over the measured steps (the first is warm-up)
    int64_t measured_peak_bytes = 0;   // the most bytes any rank held
    int64_t estimated_peak_bytes = 0;  // the planner's
    bool fits = false;                 // every rank finished every step within its memory
    std::string note;                  // why a row does not fit, or another failure
};

struct ExploreResult {
    std::vector<ExploreRow> rows;  // ascending micro-batch size (per layout, in layoutsByCost order)
    int recommended = -1;          // index into rows; -1 when nothing fits
    int64_t limit_bytes = 0;       // the per-rank budget the margin was applied to; 0: none
    double safety_margin = 0.1;    // the recommendation keeps this fraction of the budget free
};

struct ExploreOptions {
    int64_t steps_per_row = 3;
    double safety_margin = 0.1;
    // Called after each row (from the calling thread); may be empty.
    std::function<void(const ExploreRow&)> on_row;
    // Set from another thread to end the exploration: the row being measured stops at its next
    // micro-batch boundary and is left out.
    const std::atomic<bool>* cancel = nullptr;
    // Also over the memory layouts (memory_plan.h's layoutsByCost: stage and recomputation);
    // with a budget, only the rows the planner puts within it (15 % tolerance, its accuracy)
    // are measured; on one rank the sharding stages are left out (they hold what stage 0 does).
    // With runtime.offload set, every layout that can offload is measured with it too (optimizer
    // from stage 1, all at stage 3; to runtime.offload_dir when set): what offload costs in
    // tokens/s, ranked with the rest.
    bool over_layouts = false;
};

// For each m dividing B / W (K = B / (m W)), and each layout when over_layouts, trains `steps_per_row` steps at train.seq_len on a
// copy of `config` (no evaluation, checkpoints or store), with out-of-memory recovery off so an
// OOM on any rank (agreed across ranks) marks the row as not fitting. Recommends the fastest
// row whose measured peak leaves the safety margin of the budget (runtime.memory_limit_mb, or
// `limit_bytes` when that is 0). Throws ConfigError for an invalid config.
ExploreResult exploreBatchSplits(const RunConfig& config, int64_t limit_bytes, const ExploreOptions& options = {});

// The rows such an exploration measures, in order: each a layout with its micro-batch.
std::vector<MemoryLayout> explorationRows(const RunConfig& config, int64_t limit_bytes, bool over_layouts);

std::string exploreResultToJson(const ExploreResult& result);

// The recommended row of a saved `explore --json` output, for live throughput advice. Throws
// ConfigError naming the file when it is unreadable, not explorer output, or recommends nothing.
ExploredBest readExploredBest(const std::string& path);

}  // namespace trainbench

// Floor: explore/ (engine/README.md)
