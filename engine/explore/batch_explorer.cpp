// The batch explorer: one short training session per split of the global batch.
#include "trainbench/metric_keys.h"
#include "trainbench/batch_explorer.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trainbench/config_io.h"
#include "trainbench/divisors.h"
#include "trainbench/memory_plan.h"
#include "trainbench/training_session.h"

namespace trainbench {
namespace {

ExploreRow measureSplit(const RunConfig& base, int64_t m, int64_t steps, const std::atomic<bool>* cancel) {
    RunConfig config = base;
    config.train.micro_batch_size = m;
    config.train.gradient_accumulation_steps = base.globalBatch() / (m * base.runtime.world_size);
    config.train.global_batch_size.reset();
    config.train.steps = steps;
    config.train.samples = 0;  // a data budget would cut the measurement short
    config.train.eval_every = 0;
    config.train.checkpoint_every = 0;
    config.train.log_every = 1;
    config.train.warmup_steps = 0;

    ExploreRow row;
    row.zero_stage = config.runtime.zero_stage;
    row.expert_parallel = config.runtime.expert_parallel;
    row.activation_checkpointing = config.runtime.activation_checkpointing;
    row.offload = config.runtime.offload;
    row.micro_batch_size = m;
    row.gradient_accumulation_steps = config.train.gradient_accumulation_steps;
    row.estimated_peak_bytes = planMemory(config).peak_bytes;

    SessionOptions options;
    options.recover_out_of_memory = false;
    TrainingSession session(config, options);
    auto inbox = session.bus().subscribe();
    session.start();
    // A cancel stops the row being measured too, at its next micro-batch boundary.
    while (!session.wait(std::chrono::milliseconds(50)))
        if (cancel && cancel->load()) session.stop();
    const RunSummary summary = session.summary();
    row.measured_peak_bytes = summary.peak_memory_bytes;
    row.fits = summary.status == RunStatus::Completed;
    if (!row.fits)
        row.note = summary.out_of_memory               ? "out of memory"
                   : summary.status == RunStatus::Stopped ? "cancelled"
                                                          : summary.error;
    // Step 1 allocates the gradients and AdamW moments and warms every kernel up: the rate is
    // the mean over the steps after it (or step 1 alone for a single step).
    double sum = 0;
    int count = 0;
    double first = 0;
    for (const auto& p : inbox->drain().points) {
        if (p.key != metric::kTokensPerSecond) continue;
        if (p.step == 1) first = p.value;
        else sum += p.value, ++count;
    }
    row.tokens_per_s = count > 0 ? sum / count : first;
    if (!row.fits) row.tokens_per_s = 0;
    return row;
}

}  // namespace

ExploreResult exploreBatchSplits(const RunConfig& config, int64_t limit_bytes, const ExploreOptions& options) {
    requireValidRunConfig(config);
    ExploreResult result;
    result.safety_margin = options.safety_margin;
    result.limit_bytes = config.runtime.memory_limit_mb > 0 ? config.runtime.memory_limit_mb * 1024 * 1024 : limit_bytes;
    for (const MemoryLayout& layout : explorationRows(config, result.limit_bytes, options.over_layouts)) {
        if (options.cancel && options.cancel->load()) break;
        MemoryLayout placed = layout;
        placed.micro_batch_size = 0;  // measureSplit sets m and K
        ExploreRow row = measureSplit(withLayout(config, placed), layout.micro_batch_size,
                                      std::max<int64_t>(1, options.steps_per_row), options.cancel);
        if (options.cancel && options.cancel->load()) break;  // a cancelled row measured nothing
        result.rows.push_back(std::move(row));
        if (options.on_row) options.on_row(result.rows.back());
    }
    const double usable = double(result.limit_bytes) * (1.0 - result.safety_margin);
    for (size_t i = 0; i < result.rows.size(); ++i) {
        const ExploreRow& row = result.rows[i];
        const bool within_margin = result.limit_bytes <= 0 || double(row.measured_peak_bytes) <= usable;
        if (!row.fits || !within_margin) continue;
        if (result.recommended < 0 || row.tokens_per_s > result.rows[result.recommended].tokens_per_s)
            result.recommended = static_cast<int>(i);
    }
    return result;
}

std::vector<MemoryLayout> explorationRows(const RunConfig& config, int64_t limit_bytes, bool over_layouts) {
    const int64_t per_rank = config.globalBatch() / std::max<int64_t>(1, config.runtime.world_size);
    if (config.runtime.memory_limit_mb > 0) limit_bytes = config.runtime.memory_limit_mb * 1024 * 1024;
    const bool nvme = !config.runtime.offload_dir.empty();
    std::vector<MemoryLayout> layouts{{config.runtime.zero_stage, config.runtime.activation_checkpointing, 0,
                                       config.runtime.expert_parallel, config.runtime.offload, nvme}};
    if (over_layouts) {
        layouts.clear();
        const Offload asked = offload(config.runtime);
        for (MemoryLayout layout : layoutsByCost(config)) {
            // On one rank the sharding stages hold what stage 0 does, unless they offload.
            if (layout.zero_stage == 0 || config.runtime.world_size > 1) layouts.push_back(layout);
            if (asked == Offload::None || layout.zero_stage < 1) continue;
            layout.nvme = nvme;
            layout.offload = choiceName(Offload::Optimizer);
            layouts.push_back(layout);
            if (asked == Offload::All && layout.zero_stage == 3) {
                layout.offload = choiceName(Offload::All);
                layouts.push_back(layout);
            }
        }
    }
    std::vector<MemoryLayout> rows;
    for (const MemoryLayout& layout : layouts)
        for (int64_t m : divisorsOf(per_rank)) {
            if (over_layouts && limit_bytes > 0) {
                RunConfig at_m = withLayout(config, layout);
                at_m.train.micro_batch_size = m;
                if (double(planMemory(at_m).peak_bytes) > 1.15 * double(limit_bytes)) continue;
            }
            MemoryLayout row = layout;
            row.micro_batch_size = m;
            rows.push_back(row);
        }
    return rows;
}

std::string exploreResultToJson(const ExploreResult& result) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : result.rows) {
        nlohmann::json row = {{"zero_stage", r.zero_stage},
                              {"activation_checkpointing", r.activation_checkpointing},
                              {"expert_parallel", r.expert_parallel},
                              {"offload", r.offload},
                              {"micro_batch_size", r.micro_batch_size},
                              {"gradient_accumulation_steps", r.gradient_accumulation_steps},
                              {"tokens_per_s", r.tokens_per_s},
                              {"measured_peak_bytes", r.measured_peak_bytes},
                              {"estimated_peak_bytes", r.estimated_peak_bytes},
                              {"fits", r.fits}};
        if (!r.note.empty()) row["note"] = r.note;
        rows.push_back(std::move(row));
    }
    nlohmann::json recommended = nullptr;
    if (result.recommended >= 0) {
        const auto& r = result.rows[result.recommended];
        recommended = {{"zero_stage", r.zero_stage},
                       {"activation_checkpointing", r.activation_checkpointing},
                       {"expert_parallel", r.expert_parallel},
                       {"offload", r.offload},
                       {"micro_batch_size", r.micro_batch_size},
                       {"gradient_accumulation_steps", r.gradient_accumulation_steps}};
    }
    return nlohmann::json{{"rows", rows},
                          {"recommended", recommended},
                          {"limit_bytes", result.limit_bytes},
                          {"safety_margin", result.safety_margin}}
        .dump();
}

ExploredBest readExploredBest(const std::string& path) {
    std::ifstream file(path);
    if (!file) throw ConfigError("", path + ": cannot read the explorer output; write it with `trainbench-cli explore CONFIG --json > FILE`");
    std::stringstream text;
    text << file.rdbuf();
    const auto json = nlohmann::json::parse(text.str(), nullptr, false);
    if (json.is_discarded() || !json.is_object() || !json.contains("rows") || !json.contains("recommended"))
        throw ConfigError("", path + ": not the JSON of `trainbench-cli explore --json` (an object with rows and recommended)");
    if (!json["recommended"].is_object())
        throw ConfigError("", path + ": the exploration recommends no split (nothing fitted); explore again with more memory");
    ExploredBest best;
    best.micro_batch_size = json["recommended"].value("micro_batch_size", int64_t(0));
    best.gradient_accumulation_steps = json["recommended"].value("gradient_accumulation_steps", int64_t(0));
    // Older outputs name no layout: stage 0 without recomputation.
    const int64_t stage = json["recommended"].value("zero_stage", int64_t(0));
    const std::string recompute = json["recommended"].value("activation_checkpointing", std::string("none"));
    for (const auto& row : json["rows"])
        if (row.value("micro_batch_size", int64_t(-1)) == best.micro_batch_size &&
            row.value("zero_stage", int64_t(0)) == stage && row.value("activation_checkpointing", std::string("none")) == recompute)
            best.tokens_per_s = row.value("tokens_per_s", 0.0);
    if (best.micro_batch_size <= 0 || best.tokens_per_s <= 0)
        throw ConfigError("", path + ": the recommended split has no measured tokens_per_s row");
    return best;
}

}  // namespace trainbench
