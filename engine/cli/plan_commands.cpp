// `plan`: the planner's bytes per rank. `explore`: every micro-batch split of the global batch,
// measured, with a recommendation.
#include "cli/plan_commands.h"

#include <cstdio>
#include <iostream>

#include "trainbench/batch_explorer.h"
#include "trainbench/memory_plan.h"

namespace trainbench {
namespace {

double mib(int64_t bytes) { return double(bytes) / (1024.0 * 1024.0); }

}  // namespace

int commandPlan(const RunConfig& config, bool as_json) {
    const MemoryPlan plan = planMemory(config, deviceMemoryBytesPerRank(config));
    if (as_json) {
        std::cout << memoryPlanToJson(plan) << "\n";
        return 0;
    }
    std::printf("global batch %lld = micro_batch_size %lld x gradient_accumulation_steps %lld x world_size %lld; "
                "%lld tokens per step (seq_len %lld)\nmemory per rank:\n",
                (long long)plan.global_batch_size, (long long)plan.micro_batch_size,
                (long long)plan.gradient_accumulation_steps, (long long)plan.world_size,
                (long long)plan.tokens_per_step, (long long)plan.seq_len);
    const std::pair<const char*, int64_t> rows[] = {
        {"weights", plan.weight_bytes},
        {config.runtime.zero_stage >= 2 ? "gradients (fp32, 1/W)" : "gradients (fp32)", plan.gradient_bytes},
        {config.runtime.zero_stage >= 2 ? "buckets in flight (fp32)" : "sync-each running sums (fp32)", plan.bucket_bytes},
        {config.runtime.zero_stage >= 1 ? "AdamW moments (fp32, 1/W)" : "AdamW moments (fp32)", plan.optimizer_bytes},
        {"activations, one micro-batch", plan.activation_bytes},
        {"logits gradient", plan.logits_bytes},
        {"peak", plan.peak_bytes},
    };
    for (const auto& [label, bytes] : rows) std::printf("  %-30s %12.1f MiB\n", label, mib(bytes));
    if (plan.limit_bytes > 0) {
        std::printf("  %-30s %12.1f MiB (%s)\n", "budget", mib(plan.limit_bytes),
                    config.runtime.memory_limit_mb > 0 ? "runtime.memory_limit_mb" : "device memory per rank");
        std::printf("fits: %s; largest micro_batch_size that fits: %lld\n", plan.fits ? "yes" : "NO",
                    (long long)plan.largest_fitting_micro_batch);
    }
    return 0;
}

int commandExplore(const RunConfig& config, int64_t steps_per_row, bool as_json) {
    ExploreOptions options;
    options.steps_per_row = steps_per_row;
    // Rows appear as they are measured; the table goes to stderr when stdout carries JSON.
    FILE* table = as_json ? stderr : stdout;
    std::fprintf(table, "global batch %lld = m x K x %lld ranks, seq_len %lld, %lld steps per row\n",
                 (long long)config.globalBatch(), (long long)config.runtime.world_size, (long long)config.train.seq_len,
                 (long long)steps_per_row);
    std::fprintf(table, "%6s %6s %12s %14s %14s  %s\n", "m", "K", "tokens/s", "peak MiB", "planned MiB", "fits");
    options.on_row = [&](const ExploreRow& r) {
        std::fprintf(table, "%6lld %6lld %12.0f %14.1f %14.1f  %s\n", (long long)r.micro_batch_size,
                     (long long)r.gradient_accumulation_steps, r.tokens_per_s, mib(r.measured_peak_bytes),
                     mib(r.estimated_peak_bytes), r.fits ? "yes" : ("no: " + r.note).c_str());
        std::fflush(table);
    };
    const ExploreResult result = exploreBatchSplits(config, deviceMemoryBytesPerRank(config), options);
    if (result.recommended >= 0) {
        const ExploreRow& best = result.rows[result.recommended];
        std::fprintf(table, "recommended: --set train.micro_batch_size=%lld --set train.gradient_accumulation_steps=%lld\n",
                     (long long)best.micro_batch_size, (long long)best.gradient_accumulation_steps);
    } else {
        std::fprintf(table, "no split fits; %s\n", outOfMemoryAdvice(config).c_str());
    }
    if (as_json) std::cout << exploreResultToJson(result) << "\n";
    return 0;
}

}  // namespace trainbench
