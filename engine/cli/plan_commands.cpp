// `plan`: the planner's bytes per rank. `explore`: every micro-batch split of the global batch,
// measured, with a recommendation.
#include "cli/plan_commands.h"

#include <cstdio>
#include <iostream>

#include "trainbench/memory_plan.h"

namespace trainbench {
namespace {

double mib(int64_t bytes) { return double(bytes) / (1024.0 * 1024.0); }

}  // namespace

int commandPlan(const RunConfig& config, bool as_json) {
    const MemoryPlan plan = planMemory(config, hostMemoryBytesPerRank(config));
    if (as_json) {
        std::cout << memoryPlanToJson(plan) << "\n";
        return 0;
    }
    std::printf("memory per rank: micro_batch_size %lld x gradient_accumulation_steps %lld x world_size %lld, "
                "seq_len %lld\n",
                (long long)plan.micro_batch_size, (long long)plan.gradient_accumulation_steps,
                (long long)plan.world_size, (long long)plan.seq_len);
    const std::pair<const char*, int64_t> rows[] = {
        {"weights", plan.weight_bytes},
        {"gradients (fp32)", plan.gradient_bytes},
        {"reduction buffers (fp32)", plan.bucket_bytes},
        {"AdamW moments (fp32)", plan.optimizer_bytes},
        {"activations, one micro-batch", plan.activation_bytes},
        {"logits gradient", plan.logits_bytes},
        {"peak", plan.peak_bytes},
    };
    for (const auto& [label, bytes] : rows) std::printf("  %-30s %12.1f MiB\n", label, mib(bytes));
    if (plan.limit_bytes > 0) {
        std::printf("  %-30s %12.1f MiB (%s)\n", "budget", mib(plan.limit_bytes),
                    config.runtime.memory_limit_mb > 0 ? "runtime.memory_limit_mb" : "host memory / ranks");
        std::printf("fits: %s; largest micro_batch_size that fits: %lld\n", plan.fits ? "yes" : "NO",
                    (long long)plan.largest_fitting_micro_batch);
    }
    return 0;
}

}  // namespace trainbench
