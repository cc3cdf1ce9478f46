// `plan`: the planner's bytes per rank. `explore`: every micro-batch split of the global batch,
// measured, with a recommendation.
#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/command_table.h"
#include "cli/config_loading.h"
#include "trainbench/batch_explorer.h"
#include "trainbench/config_io.h"
#include "trainbench/device_type.h"
#include "trainbench/launch_lines.h"
#include "trainbench/machine_probe.h"
#include "trainbench/memory_plan.h"
#include "trainbench/process_launch.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

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
    std::string text = "zero_stage " + std::to_string(layout.zero_stage) + ", activation_checkpointing " +
                       layout.activation_checkpointing +
                       (layout.expert_parallel > 1 ? ", expert_parallel " + std::to_string(layout.expert_parallel) : std::string()) +
                       ", micro_batch_size " + std::to_string(layout.micro_batch_size);
    if (!isChoice(layout.offload, Offload::None))
        text += ", offload " + layout.offload + (layout.nvme ? " to runtime.offload_dir (NVMe)" : " to host memory");
    return text;
}

nlohmann::json targetToJson(const TargetMachine& t) {
    return {{"label", t.label},
            {"kind", choiceName(t.kind)},
            {"gpu", t.gpu},
            {"devices", t.devices},
            {"devices_per_node", t.devices_per_node},
            {"nodes", t.nodes},
            {"device_memory_bytes", t.device_memory_bytes},
            {"host_memory_bytes", t.host_memory_bytes},
            {"nvme_bytes", t.nvme_bytes},
            {"compute_tflops", t.compute_tflops},
            {"mfu", t.mfu},
            {"pcie_gbps", t.pcie_gbps},
            {"interconnect_gbps", t.interconnect_gbps},
            {"network_gbps", t.network_gbps},
            {"host_memory_gbps", t.host_memory_gbps},
            {"nvme_read_gbps", t.nvme_read_gbps},
            {"nvme_write_gbps", t.nvme_write_gbps},
            {"cpu_adamw_gparams", t.cpu_adamw_gparams}};
}

// One line: each piece of state, its tier and whether it is sharded ("AdamW moments: host, 1/W;
// ..."), with the step's place.
std::string placementSentence(const Placement& place) {
    const auto piece = [](const char* what, Tier tier, bool sharded) {
        return std::string(what) + " " + tierName(tier) + (sharded ? " (1/W)" : "");
    };
    std::string out = piece("weights", place.weights, place.sharded.weights) +
                      (place.bf16_device_weights ? " in bf16" : "") + ", " +
                      piece("gradient sums", place.gradient_sums, place.sharded.gradients) + ", " +
                      piece("AdamW moments", place.moments, place.sharded.moments);
    if (place.master != Tier::Device) out += ", fp32 master " + std::string(tierName(place.master));
    out += place.host_step ? "; the optimizer steps on the host" : "; the optimizer steps on the device";
    if (place.unit_order)
        out += std::string("; window by unit (weights gathered twice a window), boundary activations ") +
               (place.boundaries == Tier::Host   ? "on the host"
                : place.boundaries == Tier::File ? "in offload_dir"
                                                 : "on the device");
    return out;
}

// The host and NVMe tiers of an offloaded plan, per rank and per node.
void printOffloadTiers(const RunConfig& config, const MemoryPlan& plan) {
    const bool all = plan.placement.weightsOffDevice();
    std::printf("offloaded (runtime.offload %s), host memory per rank:\n", config.runtime.offload.c_str());
    const std::pair<const char*, int64_t> rows[] = {
        {isChoice(config.runtime.optimizer_dtype, OptimizerDtype::Bf16) ? "AdamW moments (bf16)" : "AdamW moments (fp32)", plan.host_moment_bytes},
        {!all                             ? "master weights (fp32)"
         : plan.weight_element_bytes == 2 ? "master (fp32) + shard (bf16)"
                                          : "weights' shard (fp32 master)",
         plan.host_master_bytes},
        {plan.gradient_sum_element_bytes == 2 ? "gradient slice sums (bf16)" : "gradient slice sums (fp32)", plan.host_gradient_bytes},
        {"staging buffers", plan.host_staging_bytes},
        {plan.placement.boundaries == Tier::File ? "boundaries' file buffers (fp32)" : "boundary activations (fp32)",
         plan.host_boundary_bytes},
        {"host memory", plan.host_bytes},
    };
    for (const auto& [label, bytes] : rows)
        if (bytes > 0 || label == rows[5].first) std::printf("  %-32s %12s\n", label, readableBytes(bytes).c_str());
    const int64_t rpn = plan.ranks_per_node;
    std::printf("  %-32s %12s%s\n", ("per node (" + std::to_string(rpn) + (rpn == 1 ? " rank)" : " ranks)")).c_str(),
                readableBytes(plan.host_bytes * rpn).c_str(),
                plan.host_limit_bytes > 0 ? (" of " + readableBytes(plan.host_limit_bytes) + (plan.fits_host ? "" : ": does NOT fit")).c_str()
                                          : "");
    if (!config.runtime.offload_dir.empty())
        std::printf("  %-32s %12s per rank, %s per node%s\n", "runtime.offload_dir (NVMe)", readableBytes(plan.nvme_bytes).c_str(),
                    readableBytes(plan.nvme_bytes * rpn).c_str(),
                    plan.nvme_limit_bytes > 0 ? (" of " + readableBytes(plan.nvme_limit_bytes) + (plan.fits_nvme ? "" : ": does NOT fit")).c_str()
                                              : "");
    if (plan.nvme_boundary_bytes > 0)
        std::printf("  %-32s %12s per rank\n", "of which the window's boundaries", readableBytes(plan.nvme_boundary_bytes).c_str());
}

void printStepTime(const StepTimePlan& t, int64_t K) {
    auto ms = [](double s) { return s * 1e3; };
    std::printf("step time: %s\n", describeStepTime(t).c_str());
    std::printf("  per micro-batch (x%lld, overlapped): compute %.1f ms (%.3g TFLOP), collectives %.1f ms, PCIe up %.1f ms "
                "and down %.1f ms (at once), NVMe reads %.1f ms and writes %.1f ms, the node's host memory %.1f ms (host adds %.1f ms of it)\n",
                (long long)K, ms(t.compute_s), t.flops_per_micro_batch / 1e12, ms(t.collectives_s), ms(t.pcie_up_s),
                ms(t.pcie_down_s), ms(t.nvme_read_s), ms(t.nvme_write_s), ms(t.host_memory_s), ms(t.host_adds_s));
    if (t.optimizer_s + t.nvme_step_s + t.weights_up_s + t.gradients_down_s > 0)
        std::printf("  per step: gradients down %.1f ms (beside the last backward), CPU AdamW %.1f ms, NVMe %.1f ms "
                    "(pipelined with it), host memory %.1f ms (all three), weights up %.1f ms\n",
                    ms(t.gradients_down_s), ms(t.optimizer_s), ms(t.nvme_step_s), ms(t.tail_host_memory_s),
                    ms(t.weights_up_s));
    if (t.to_device_bytes + t.to_host_bytes + t.nvme_read_bytes + t.nvme_write_bytes > 0)
        std::printf("  moved per step, every rank: to the devices %s, to the host %s (io/to_device_bytes, "
                    "io/to_host_bytes), NVMe read %s, written %s (io/read_bytes, io/write_bytes)\n",
                    readableBytes(int64_t(t.to_device_bytes)).c_str(), readableBytes(int64_t(t.to_host_bytes)).c_str(),
                    readableBytes(int64_t(t.nvme_read_bytes)).c_str(), readableBytes(int64_t(t.nvme_write_bytes)).c_str());
}

// The four precisions at the config's layout (planPrecisions): what fp8 and bf16 moments buy.
void printPrecisions(const std::vector<PrecisionFit>& fits) {
    const MemoryPlan& first = fits.front().plan;
    std::printf("precisions at this layout (runtime.dtype, runtime.optimizer_dtype; peak at micro_batch_size %lld):\n",
                (long long)first.micro_batch_size);
    std::printf("  %-6s %-7s %10s %14s %14s %14s\n", "dtype", "moments", "largest m", "peak", "activations",
                "AdamW moments");
    for (const PrecisionFit& f : fits)
        std::printf("  %-6s %-7s %10s %10.1f MiB %10.1f MiB %10.1f MiB\n", f.dtype.c_str(), f.optimizer_dtype.c_str(),
                    first.limit_bytes > 0 ? std::to_string(f.largest_micro_batch).c_str() : "-", mib(f.plan.peak_bytes),
                    mib(f.plan.activation_bytes), mib(f.plan.optimizer_bytes));
    std::printf("  (bf16 is planned at fp32's bytes: on the CPU its tensors stay fp32; on CUDA autocast's copies "
                "are counted at 4 bytes too)\n");
}

int commandPlan(const RunConfig& config, const std::string& config_path, const std::vector<std::string>& overrides,
                bool as_json) {
    const TargetMachine target = resolveTarget(config);
    const RunConfig placed = configOnTarget(config, target);
    const MemoryPlan plan = planOnTarget(config, target);
    const TargetAdvice target_advice = adviseOnTarget(config, target);
    const LayoutAdvice& advice = target_advice.layout;
    const StepTimePlan time = predictStepTime(placed, plan, target);
    const std::vector<PrecisionFit> precisions = planPrecisionsOnTarget(config, target);
    if (as_json) {
        // The plan's fields, the target, the step time, and what fits under "advice".
        nlohmann::json j = nlohmann::json::parse(memoryPlanToJson(plan));
        j["target"] = targetToJson(target);
        j["step_time"] = nlohmann::json::parse(stepTimePlanToJson(time));
        j["advice"] = nlohmann::json::parse(layoutAdviceToJson(advice));
        j["advice"]["why_none"] = target_advice.why_none;
        if (advice.cheapest.micro_batch_size > 0) {
            const RunConfig chosen = withLayout(placed, advice.cheapest);
            j["advice"]["cheapest"]["step_time"] =
                nlohmann::json::parse(stepTimePlanToJson(predictStepTime(chosen, advice.cheapest_plan, target)));
        }
        j["precisions"] = nlohmann::json::parse(precisionFitsToJson(precisions));
        j["inference_cache"] = nlohmann::json::parse(inferenceCachePlanToJson(planInferenceCache(config.model)));
        const LaunchLines launch = launchLines(config, config_path, overrides);
        j["launch"] = {{"ranks", launch.ranks}};
        if (!launch.torchrun.empty()) {
            j["launch"]["torchrun"] = launch.torchrun;
            j["launch"]["srun"] = launch.srun;
            if (!launch.torchrun_two_nodes.empty()) j["launch"]["torchrun_two_nodes"] = launch.torchrun_two_nodes;
        }
        std::cout << j.dump() << "\n";
        return 0;
    }
    const int64_t stage = placed.runtime.zero_stage;
    if (target.kind != TargetKind::Here)
        std::printf("target: %s (%lld node%s of %lld; a plan only: runtime says where a run trains); runtime.dtype %s at "
                    "%.4g TFLOP/s each\n",
                    target.label.c_str(), (long long)target.nodes, target.nodes == 1 ? "" : "s",
                    (long long)target.devices_per_node, placed.runtime.dtype.c_str(), target.compute_tflops);
    std::printf("global batch %lld = micro_batch_size %lld x gradient_accumulation_steps %lld x world_size %lld; "
                "%lld tokens per step (seq_len %lld)\nlayout: zero_stage %lld, activation_checkpointing %s, "
                "expert_parallel %lld\nmemory per rank:\n",
                (long long)plan.global_batch_size, (long long)plan.micro_batch_size,
                (long long)plan.gradient_accumulation_steps, (long long)plan.world_size,
                (long long)plan.tokens_per_step, (long long)plan.seq_len, (long long)stage,
                placed.runtime.activation_checkpointing.c_str(), (long long)plan.expert_parallel);
    std::printf("where state lives: %s\n", placementSentence(plan.placement).c_str());
    const Placement& place = plan.placement;
    const bool weights_off = place.weightsOffDevice();
    // Offload all: the unit gathered and, on a GPU, the next one arriving.
    // bf16 device weights beside the host's fp32 master (offload on a GPU).
    const std::string weights_label = std::string(plan.weight_element_bytes == 2 ? "weights (bf16, the embedding fp32"
                                                                                 : "weights (fp32") +
                                      (weights_off ? (target.gpu ? ", two units)" : ", one unit)")
                                       : place.sharded.weights ? ", 1/W + one unit)"
                                                    : ")");
    const std::pair<std::string, int64_t> rows[] = {
        {weights_label, plan.weight_bytes},
        {std::string("gradients (") + (plan.gradient_sum_element_bytes == 2 ? "bf16 sums" : "fp32") +
             (place.unit_order && (plan.gradients_on_host || plan.gradients_in_file)
                  ? std::string(", one unit's 1/W; the rest ") + (plan.gradients_in_file ? "in offload_dir)" : "on the host)")
              : plan.gradients_on_host  ? ", on the host)"
              : place.sharded.gradients ? ", 1/W)"
                                        : ")"),
         plan.gradient_bytes},
        {place.sharded.gradients ? "buckets in flight (fp32)" : "sync-each running sums (fp32)", plan.bucket_bytes},
        {place.moments == Tier::Device
             ? "AdamW moments (" + placed.runtime.optimizer_dtype + (place.sharded.moments ? ", 1/W)" : ")")
             : "AdamW moments (offloaded)",
         place.moments == Tier::Device ? plan.optimizer_bytes : 0},
        {recomputation(placed.runtime) == Recomputation::Full          ? "activations (recomputed blocks)"
         : recomputation(placed.runtime) == Recomputation::Feedforward ? "activations (recomputed FFNs)"
                                                                    : "activations, one micro-batch",
         plan.activation_bytes},
        {plan.head_chunk_tokens > 0 ? "head (chunks of " + std::to_string(plan.head_chunk_tokens) + " tokens)"
                                    : std::string("head (whole logits)"),
         plan.logits_bytes},
        {plan.placement.boundaries == Tier::Device ? "window's boundary activations" : "window's boundaries (rest off)",
         plan.device_boundary_bytes},
        {"peak", plan.peak_bytes},
    };
    for (const auto& [label, bytes] : rows)
        if (bytes > 0 || label.rfind("window's", 0) != 0)  // the unit order's only
            std::printf("  %-32s %12.1f MiB\n", label.c_str(), mib(bytes));
    if (place.moments != Tier::Device) printOffloadTiers(placed, plan);
    if (plan.world_size > 1)
        std::printf("collectives per step and rank: %lld calls, %.1f MiB sent\n", (long long)plan.collectives_per_step,
                    mib(plan.bytes_sent_per_step));
    if (const LaunchLines launch = launchLines(config, config_path, overrides); !launch.torchrun.empty()) {
        std::printf("ranks: %s; one process per rank:\n  %s\n", launch.ranks.c_str(), launch.torchrun.c_str());
        if (!launch.torchrun_two_nodes.empty()) std::printf("  on two machines: %s\n", launch.torchrun_two_nodes.c_str());
        std::string srun = launch.srun;
        for (size_t at = srun.find('\n'); at != std::string::npos; at = srun.find('\n', at + 1)) srun.insert(at + 1, "    ");
        std::printf("  under Slurm (sbatch):\n    %s\n", srun.c_str());
    }
    if (plan.shard_gathered_bytes_per_step > 0)
        std::printf("weights' shards gathered per step, all ranks: %s (io/gathered_bytes)\n",
                    readableBytes(plan.shard_gathered_bytes_per_step).c_str());
    if (plan.expert_parallel > 1)
        std::printf("expert parallelism: %.1f MiB of tokens exchanged per micro-batch and rank\n",
                    mib(plan.all_to_all_bytes_per_micro_batch));
    printStepTime(time, plan.gradient_accumulation_steps);
    if (plan.limit_bytes > 0) {
        std::printf("  %-32s %12.1f MiB (%s)\n", "budget", mib(plan.limit_bytes),
                    placed.runtime.memory_limit_mb > 0 ? "runtime.memory_limit_mb"
                    : target.kind != TargetKind::Here ? ("one " + target.label.substr(target.label.find(" x ") + 3)).c_str()
                                                      : "device memory per rank");
        std::printf("fits: %s; largest micro_batch_size that fits: %lld\n",
                    plan.fits ? "yes" : !plan.fits_device ? "NO" : !plan.fits_host ? "NO (host memory)" : "NO (NVMe)",
                    (long long)plan.largest_fitting_micro_batch);
        std::printf("what fits this budget, %.0f %% of it kept free:\n", 100 * kLayoutSafetyMargin);
        if (advice.cheapest.micro_batch_size > 0) {
            std::printf("  on %lld rank%s: %s (peak %.1f MiB", (long long)plan.world_size, plan.world_size == 1 ? "" : "s",
                        describeLayout(advice.cheapest).c_str(), mib(advice.cheapest_plan.peak_bytes));
            if (target_advice.offloaded) {
                const MemoryPlan& chosen = advice.cheapest_plan;
                std::printf("; host %s per node", readableBytes(chosen.host_bytes * chosen.ranks_per_node).c_str());
                if (chosen.nvme_bytes > 0)
                    std::printf(", NVMe %s per node", readableBytes(chosen.nvme_bytes * chosen.ranks_per_node).c_str());
                const StepTimePlan chosen_time = predictStepTime(withLayout(placed, advice.cheapest), chosen, target);
                std::printf(", K %lld; %s", (long long)chosen.gradient_accumulation_steps,
                            describeStepTime(chosen_time).c_str());
            }
            std::printf(")\n");
        } else {
            std::printf("  on %lld rank%s: no layout fits, even at micro_batch_size 1%s%s\n", (long long)plan.world_size,
                        plan.world_size == 1 ? "" : "s", target_advice.why_none.empty() ? "" : ": ",
                        target_advice.why_none.c_str());
        }
        if (advice.fewest_ranks > 0)
            std::printf("  fewest ranks at micro_batch_size 1 without offload: %lld, with %s (peak %.1f MiB)\n",
                        (long long)advice.fewest_ranks, describeLayout(advice.fewest_ranks_layout).c_str(),
                        mib(advice.fewest_ranks_plan.peak_bytes));
        else
            std::printf("  no number of ranks up to 4096 fits micro_batch_size 1: shorten train.seq_len\n");
    }
    printPrecisions(precisions);
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
    std::fprintf(table, "%5s %9s %3s %9s %6s %6s %12s %14s %14s  %s\n", "stage", "recompute", "EP", "offload", "m", "K",
                 "tokens/s", "peak MiB", "planned MiB", "fits");
    options.on_row = [&](const ExploreRow& r) {
        std::fprintf(table, "%5lld %9s %3lld %9s %6lld %6lld %12.0f %14.1f %14.1f  %s\n", (long long)r.zero_stage,
                     r.activation_checkpointing.c_str(), (long long)r.expert_parallel, r.offload.c_str(),
                     (long long)r.micro_batch_size,
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
                                "--set runtime.expert_parallel=%lld --set runtime.offload=%s",
                         (long long)best.zero_stage, best.activation_checkpointing.c_str(), (long long)best.expert_parallel,
                         best.offload.c_str());
        std::fprintf(table, "\n");
    } else {
        std::fprintf(table, "no split fits; %s\n", outOfMemoryAdvice(config).c_str());
    }
    if (as_json) std::cout << exploreResultToJson(result) << "\n";
    return 0;
}

// `probe`: this machine's rates, and the target fields that carry them into `plan`.
int commandProbe(const RunConfig& config, const std::string& directory, int64_t mib_per_test, bool as_json,
                 bool model_given) {
    const std::string dir = directory.empty() ? config.runtime.offload_dir : directory;
    MachineProbe probe = probeMachine(probeThreads(config), mib_per_test << 20, dir, mib_per_test << 20,
                                      directory.empty() ? "runtime.offload_dir" : "--dir");
    // CPU ranks: what a micro-batch of the given config's model reaches of the matrix rate.
    const bool cpu_ranks = deviceTypeOf(config.runtime) == DeviceType::Cpu;
    if (cpu_ranks && model_given) probe.step_mfu = probeStepMfu(config, probe.threads, probe.cpu_fp32_tflops);
    // CPU rank threads of several ranks: their collectives, among as many threads.
    if (cpu_ranks && config.runtime.world_size > 1) {
        probe.collective_ranks = int(config.runtime.world_size);
        probe.rank_collectives_gbps = probeRankThreadCollectives(probe.collective_ranks, mib_per_test << 20);
    }
    if (as_json) {
        std::cout << machineProbeToJson(probe) << "\n";
        return 0;
    }
    std::printf("host memory copy (every core, %lld MiB): %.1f GB/s read + written\n", (long long)mib_per_test,
                probe.host_copy_gbps);
    std::printf("CPU fp32 matrix products (a rank's %d thread%s): %.3f TFLOP/s\n", probe.threads,
                probe.threads == 1 ? "" : "s", probe.cpu_fp32_tflops);
    std::printf("CPU AdamW (the fused kernel, fp32 moments): %.3f billion parameters a second\n", probe.cpu_adamw_gparams);
    if (probe.step_mfu > 0)
        std::printf("a micro-batch of this config's model, forward and backward: %.2f of the matrix rate (MFU)\n",
                    probe.step_mfu);
    if (probe.rank_collectives_gbps > 0)
        std::printf("collectives among %d rank threads (the in-process hub): %.2f GB/s a rank, as a ring's bytes\n",
                    probe.collective_ranks, probe.rank_collectives_gbps);
    auto figure = [](double value) {
        char text[32];
        std::snprintf(text, sizeof text, "%.3g", value);
        return std::string(text);
    };
    // The fields a plan reads them from, filled by the rule the batch panel plans with.
    const TargetConfig rates = withProbedRates(TargetConfig{}, probe, cpu_ranks, probe.directory);
    std::string flags = "--set target.host_memory_gbps=" + figure(rates.host_memory_gbps);
    if (rates.cpu_adamw_gparams > 0) flags += " --set target.cpu_adamw_gparams=" + figure(rates.cpu_adamw_gparams);
    if (rates.compute_tflops > 0)
        flags += " --set target.compute_tflops=" + figure(rates.compute_tflops) + " --set target.mfu=" + figure(rates.mfu);
    if (rates.interconnect_gbps > 0) flags += " --set target.interconnect_gbps=" + figure(rates.interconnect_gbps);
    if (!probe.directory.empty()) {
        std::printf("%s (O_DIRECT, %s): write %.2f GB/s, read %.2f GB/s\n", probe.directory.c_str(),
                    readableBytes(probe.directory_bytes).c_str(), probe.directory_write_gbps, probe.directory_read_gbps);
        flags += " --set target.nvme_read_gbps=" + figure(rates.nvme_read_gbps) +
                 " --set target.nvme_write_gbps=" + figure(rates.nvme_write_gbps);
    } else {
        std::printf("no directory probed (--dir DIR, or runtime.offload_dir in the config)\n");
    }
    std::printf("plan with these: %s\n", flags.c_str());
    return 0;
}

struct PlanOptions {
    std::string config_path;
    std::vector<std::string> overrides;
    bool as_json = false;
    int64_t steps = 3;
    bool layouts = false;
    std::string target;
};

// A GPU kind as a person writes it: any case, and a bare name where one memory size is the usual
// one (H100 is nearly always the 80 GB part, H200 141, B200 180), with a note on stderr saying
// which it assumed. A100 came in two sizes in equal numbers: it must be named.
std::string targetKind(const std::string& written, const std::string& flag) {
    std::string kind;
    for (char ch : written) kind += char(std::tolower(static_cast<unsigned char>(ch)));
    static const std::vector<std::pair<std::string, std::string>> usual = {
        {"h100", "h100-80"}, {"h200", "h200-141"}, {"b200", "b200-180"}};
    for (const auto& [bare, full] : usual)
        if (kind == bare) {
            std::cerr << "plan: " << flag << " names " << written << " without its memory: planning for " << full
                      << " (the usual size; name another as " << bare << "-GB)\n";
            return full;
        }
    if (kind == "a100")
        throw ConfigError("target.kind", flag + ": the A100 comes with 40 and 80 GB; name one: a100-40 or a100-80");
    return kind;
}

// --target 8xh100-80 (or "8 x H100", "h100-80", "here"): the target section's kind and devices, as
// --set would write them (the config's validation names a wrong kind).
std::vector<std::string> targetOverrides(const std::string& target) {
    if (target.empty()) return {};
    const std::string flag = "--target " + target;
    std::string text;
    for (char ch : target)
        if (ch != ' ') text += ch;
    const size_t x = text.find_first_of("xX");
    if (x != std::string::npos && x > 0 && text.find_first_not_of("0123456789") == x) {
        const std::string count = text.substr(0, x);
        if (count.size() > 7)
            throw ConfigError("target.devices", flag + ": at most 2^20 devices (target.devices)");
        return {"target.kind=" + targetKind(text.substr(x + 1), flag), "target.devices=" + count};
    }
    return {"target.kind=" + targetKind(text, flag)};
}

}  // namespace

void addPlanCommands(CLI::App& app, CommandTable& table) {
    auto plan_options = std::make_shared<PlanOptions>();
    auto* plan = app.add_subcommand("plan", "Memory per rank of a config: weights, gradients, optimizer, activations, peak");
    addConfigArgument(plan, plan_options->config_path);
    addOverridesOption(plan, plan_options->overrides);
    addJsonFlag(plan, plan_options->as_json);
    plan->add_option("--target", plan_options->target,
                     "Plan for another machine: N x KIND (8xh100-80; kinds a100-40, a100-80, h100-80, h200-141, "
                     "b200-180) or here; the same as --set target.kind=KIND --set target.devices=N");
    table.add(plan, [plan_options] {
        std::vector<std::string> overrides = plan_options->overrides;
        for (const std::string& o : targetOverrides(plan_options->target)) overrides.push_back(o);
        return commandPlan(loadWithoutData(plan_options->config_path, overrides), plan_options->config_path, overrides,
                           plan_options->as_json);
    });

    struct ProbeOptions {
        std::string config_path;
        std::vector<std::string> overrides;
        std::string directory;
        int64_t mib = 256;
        bool as_json = false;
    };
    auto probe_options = std::make_shared<ProbeOptions>();
    auto* probe = app.add_subcommand("probe", "Measure this machine's host memory copy rate, CPU matrix rate and a "
                                              "directory's direct read and write rates, for plan's step time");
    probe->add_option("config", probe_options->config_path,
                      "Run config (its runtime.threads and runtime.offload_dir; on CPU ranks one micro-batch of its "
                      "model gives the step's MFU)");
    addOverridesOption(probe, probe_options->overrides);
    probe->add_option("--dir", probe_options->directory, "Directory to probe (default: runtime.offload_dir)");
    probe->add_option("--mib", probe_options->mib, "MiB per copy buffer and through the directory")
        ->default_val(256)
        ->check(CLI::Range(16, 65536));
    addJsonFlag(probe, probe_options->as_json);
    table.add(probe, [probe_options] {
        const ProbeOptions& o = *probe_options;
        const RunConfig config = o.config_path.empty() && o.overrides.empty() ? RunConfig{}
                                                                              : loadWithoutData(o.config_path, o.overrides);
        return commandProbe(config, o.directory, o.mib, o.as_json, !o.config_path.empty());
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
                      "Also over the memory layouts: runtime.zero_stage 0-3, expert_parallel and activation_checkpointing "
                      "none|feedforward|full (only the rows the planner puts within the budget); with runtime.offload "
                      "set, each layout that can offload also with it");
    table.add(explore, [explore_options] {
        if (auto launch = processLaunchFromEnvironment())
            throw ConfigError(launch->launcher == "torchrun" ? "WORLD_SIZE" : "SLURM_NTASKS",
                              "explore measures every split in one process; run it without " + launch->launcher);
        const PlanOptions& o = *explore_options;
        return commandExplore(loadWithOverrides(o.config_path, o.overrides), o.steps, o.as_json, o.layouts);
    });
}

}  // namespace trainbench::cli
