// `plan`: the planner's bytes per rank. `explore`: every micro-batch split of the global batch,
// measured, with a recommendation.
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command_table.h"
#include "cli/config_loading.h"
#include "trainbench/batch_explorer.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/process_launch.h"

namespace trainbench::cli {
namespace {

double mib(int64_t bytes) { return double(bytes) / (1024.0 * 1024.0); }

// 1.1 KiB, 80.0 KiB, 9.2 GiB: a size read at a glance.
std::string readableBytes(int64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = double(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 4) value /= 1024.0, ++unit;
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return text;
}

// Decoding's cache (generate), in both forms of MLA, as the reference sizes it.
void printInferenceCache(const RunConfig& config) {
    const InferenceCachePlan cache = planInferenceCache(config.model);
    std::printf("inference cache (generate): model.max_batch_size %lld x model.max_seq_len %lld positions, %lld layers, "
                "bf16 as the reference keeps it (trainbench's generate: the weights' fp32, twice this)\n",
                (long long)cache.rows, (long long)cache.positions, (long long)cache.layers);
    std::printf("  %-32s %12s per token %12s in all\n", "naive (per-head keys, values)",
                readableBytes(cache.naive_bytes_per_token).c_str(), readableBytes(cache.naive_bytes).c_str());
    std::printf("  %-32s %12s per token %12s in all\n", "absorbed (latent + rotary key)",
                readableBytes(cache.absorbed_bytes_per_token).c_str(), readableBytes(cache.absorbed_bytes).c_str());
}

std::string describeLayout(const MemoryLayout& layout) {
    return "zero_stage " + std::to_string(layout.zero_stage) + ", activation_checkpointing " +
           layout.activation_checkpointing +
           (layout.expert_parallel > 1 ? ", expert_parallel " + std::to_string(layout.expert_parallel) : std::string()) +
           ", micro_batch_size " + std::to_string(layout.micro_batch_size);
}

int commandPlan(const RunConfig& config, bool as_json) {
    const int64_t budget = deviceMemoryBytesPerRank(config);
    const MemoryPlan plan = planMemory(config, budget);
    const LayoutAdvice advice = adviseLayout(config, budget);
    if (as_json) {
        // The plan's fields, and what fits under "advice".
        nlohmann::json j = nlohmann::json::parse(memoryPlanToJson(plan));
        j["advice"] = nlohmann::json::parse(layoutAdviceToJson(advice));
        j["inference_cache"] = nlohmann::json::parse(inferenceCachePlanToJson(planInferenceCache(config.model)));
        std::cout << j.dump() << "\n";
        return 0;
    }
    const int64_t stage = config.runtime.zero_stage;
    std::printf("global batch %lld = micro_batch_size %lld x gradient_accumulation_steps %lld x world_size %lld; "
                "%lld tokens per step (seq_len %lld)\nlayout: zero_stage %lld, activation_checkpointing %s, "
                "expert_parallel %lld\nmemory per rank:\n",
                (long long)plan.global_batch_size, (long long)plan.micro_batch_size,
                (long long)plan.gradient_accumulation_steps, (long long)plan.world_size,
                (long long)plan.tokens_per_step, (long long)plan.seq_len, (long long)stage,
                config.runtime.activation_checkpointing.c_str(), (long long)plan.expert_parallel);
    const std::pair<const char*, int64_t> rows[] = {
        {stage >= 3 ? "weights (fp32, 1/W + one unit)" : "weights (fp32)", plan.weight_bytes},
        {stage >= 2 ? "gradients (fp32, 1/W)" : "gradients (fp32)", plan.gradient_bytes},
        {stage >= 2 ? "buckets in flight (fp32)" : "sync-each running sums (fp32)", plan.bucket_bytes},
        {stage >= 1 ? "AdamW moments (fp32, 1/W)" : "AdamW moments (fp32)", plan.optimizer_bytes},
        {recomputation(config.runtime) == Recomputation::Full          ? "activations (recomputed blocks)"
         : recomputation(config.runtime) == Recomputation::Feedforward ? "activations (recomputed FFNs)"
                                                                    : "activations, one micro-batch",
         plan.activation_bytes},
        {"logits gradient", plan.logits_bytes},
        {"peak", plan.peak_bytes},
    };
    for (const auto& [label, bytes] : rows) std::printf("  %-32s %12.1f MiB\n", label, mib(bytes));
    if (isChoice(config.runtime.offload, Offload::Optimizer)) {
        std::printf("offloaded (runtime.offload optimizer; AdamW moments not in the peak):\n");
        std::printf("  %-32s %12.1f MiB\n", "host memory per rank", mib(plan.host_bytes));
        if (!config.runtime.offload_dir.empty())
            std::printf("  %-32s %12.1f MiB\n", "runtime.offload_dir per rank", mib(plan.nvme_bytes));
    }
    if (plan.world_size > 1)
        std::printf("collectives per step and rank: %lld calls, %.1f MiB sent\n", (long long)plan.collectives_per_step,
                    mib(plan.bytes_sent_per_step));
    if (plan.expert_parallel > 1)
        std::printf("expert parallelism: %.1f MiB of tokens exchanged per micro-batch and rank\n",
                    mib(plan.all_to_all_bytes_per_micro_batch));
    if (plan.limit_bytes > 0) {
        std::printf("  %-32s %12.1f MiB (%s)\n", "budget", mib(plan.limit_bytes),
                    config.runtime.memory_limit_mb > 0 ? "runtime.memory_limit_mb" : "device memory per rank");
        std::printf("fits: %s; largest micro_batch_size that fits: %lld\n", plan.fits ? "yes" : "NO",
                    (long long)plan.largest_fitting_micro_batch);
        std::printf("what fits this budget, %.0f %% of it kept free:\n", 100 * kLayoutSafetyMargin);
        if (advice.cheapest.micro_batch_size > 0)
            std::printf("  on %lld rank%s: %s (peak %.1f MiB)\n", (long long)plan.world_size, plan.world_size == 1 ? "" : "s",
                        describeLayout(advice.cheapest).c_str(), mib(advice.cheapest_plan.peak_bytes));
        else
            std::printf("  on %lld rank%s: no layout fits, even at micro_batch_size 1\n", (long long)plan.world_size,
                        plan.world_size == 1 ? "" : "s");
        if (advice.fewest_ranks > 0)
            std::printf("  fewest ranks at micro_batch_size 1: %lld, with %s (peak %.1f MiB)\n",
                        (long long)advice.fewest_ranks, describeLayout(advice.fewest_ranks_layout).c_str(),
                        mib(advice.fewest_ranks_plan.peak_bytes));
        else
            std::printf("  no number of ranks up to 4096 fits micro_batch_size 1: shorten train.seq_len\n");
    }
    printInferenceCache(config);
    return 0;
}

int commandExplore(const RunConfig& config, int64_t steps_per_row, bool as_json, bool over_layouts) {
    ExploreOptions options;
    options.steps_per_row = steps_per_row;
    options.over_layouts = over_layouts;
    // Rows appear as they are measured; the table goes to stderr when stdout carries JSON.
    FILE* table = as_json ? stderr : stdout;
    std::fprintf(table, "global batch %lld = m x K x %lld ranks, seq_len %lld, %lld steps per row\n",
                 (long long)config.globalBatch(), (long long)config.runtime.world_size, (long long)config.train.seq_len,
                 (long long)steps_per_row);
    std::fprintf(table, "%5s %9s %3s %6s %6s %12s %14s %14s  %s\n", "stage", "recompute", "EP", "m", "K", "tokens/s",
                 "peak MiB", "planned MiB", "fits");
    options.on_row = [&](const ExploreRow& r) {
        std::fprintf(table, "%5lld %9s %3lld %6lld %6lld %12.0f %14.1f %14.1f  %s\n", (long long)r.zero_stage,
                     r.activation_checkpointing.c_str(), (long long)r.expert_parallel, (long long)r.micro_batch_size,
                     (long long)r.gradient_accumulation_steps, r.tokens_per_s, mib(r.measured_peak_bytes),
                     mib(r.estimated_peak_bytes), r.fits ? "yes" : ("no: " + r.note).c_str());
        std::fflush(table);
    };
    const ExploreResult result = exploreBatchSplits(config, deviceMemoryBytesPerRank(config), options);
    if (result.recommended >= 0) {
        const ExploreRow& best = result.rows[result.recommended];
        std::fprintf(table, "recommended: --set train.micro_batch_size=%lld --set train.gradient_accumulation_steps=%lld",
                     (long long)best.micro_batch_size, (long long)best.gradient_accumulation_steps);
        if (over_layouts)
            std::fprintf(table, " --set runtime.zero_stage=%lld --set runtime.activation_checkpointing=%s "
                                "--set runtime.expert_parallel=%lld",
                         (long long)best.zero_stage, best.activation_checkpointing.c_str(), (long long)best.expert_parallel);
        std::fprintf(table, "\n");
    } else {
        std::fprintf(table, "no split fits; %s\n", outOfMemoryAdvice(config).c_str());
    }
    if (as_json) std::cout << exploreResultToJson(result) << "\n";
    return 0;
}

struct PlanOptions {
    std::string config_path;
    std::vector<std::string> overrides;
    bool as_json = false;
    int64_t steps = 3;
    bool layouts = false;
};

}  // namespace

void addPlanCommands(CLI::App& app, CommandTable& table) {
    auto plan_options = std::make_shared<PlanOptions>();
    auto* plan = app.add_subcommand("plan", "Memory per rank of a config: weights, gradients, optimizer, activations, peak");
    addConfigArgument(plan, plan_options->config_path);
    addOverridesOption(plan, plan_options->overrides);
    addJsonFlag(plan, plan_options->as_json);
    table.add(plan, [plan_options] {
        return commandPlan(loadWithoutData(plan_options->config_path, plan_options->overrides), plan_options->as_json);
    });

    auto explore_options = std::make_shared<PlanOptions>();
    auto* explore = app.add_subcommand("explore", "Measure every micro-batch split of the global batch; recommend one");
    addConfigArgument(explore, explore_options->config_path);
    addOverridesOption(explore, explore_options->overrides);
    explore->add_option("--steps", explore_options->steps, "Optimizer steps per split (the first is warm-up)")
        ->default_val(3)
        ->check(CLI::Range(1, 1000));
    addJsonFlag(explore, explore_options->as_json, "Print one JSON object (rows and recommended) on stdout");
    explore->add_flag("--layouts", explore_options->layouts,
                      "Also over the memory layouts: runtime.zero_stage 0-3 and activation_checkpointing "
                      "none|feedforward|full (only the rows the planner puts within the budget)");
    table.add(explore, [explore_options] {
        if (auto launch = processLaunchFromEnvironment())
            throw ConfigError(launch->launcher == "torchrun" ? "WORLD_SIZE" : "SLURM_NTASKS",
                              "explore measures every split in one process; run it without " + launch->launcher);
        const PlanOptions& o = *explore_options;
        return commandExplore(loadWithOverrides(o.config_path, o.overrides), o.steps, o.as_json, o.layouts);
    });
}

}  // namespace trainbench::cli
