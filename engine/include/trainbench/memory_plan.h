// The memory planner: bytes per rank for one training configuration, derived from the config
// alone (no tensor is allocated), and the largest micro-batch that fits a budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainbench/device_budget.h"
#include "trainbench/placement.h"
#include "trainbench/run_config.h"

namespace trainbench {

// Bytes one rank holds at its peak, by kind. The peak is reached in the backward pass of a
// micro-batch once the optimizer has stepped: weights, the buckets beyond the gradients, both AdamW
// moments, the activations saved by the forward pass, the gradient of the logits being formed,
// and the parameter gradients (views of the reduction buckets, alive for the whole run).
// runtime.dtype changes the activations only (fp8: the projections' and gated MLPs' inputs kept
// in fp8, engine/plan/activation_bytes.cpp; bf16: counted as fp32, see there); weights,
// gradients and buckets stay fp32 in every precision; runtime.optimizer_dtype sets the moments'.
struct MemoryPlan {
    int64_t micro_batch_size = 0;
    int64_t gradient_accumulation_steps = 0;
    int64_t seq_len = 0;
    int64_t world_size = 0;
    int64_t global_batch_size = 0;  // m x K x W sequences
    int64_t tokens_per_step = 0;    // global batch x seq_len
    int64_t zero_stage = 0;
    // What is sharded and where each piece of state lives (the rule the layouts build from).
    Placement placement;
    std::string activation_checkpointing = "none";
    int64_t expert_parallel = 1;  // each rank holds the dense weights and 1/EP of the routed experts
    int64_t weight_bytes = 0;     // stage 3: this rank's shard (4P/W) and the one unit gathered at a time
    int64_t gradient_bytes = 0;   // fp32, one per parameter (stages 2 and 3: the slice sums, in their dtype)
    // The slice sums' bytes an element (stages 2 and 3): 4, or 2 under runtime.gradient_sum_dtype
    // bf16, in every tier they wait in; each micro-batch's reduced slice stays fp32.
    int64_t gradient_sum_element_bytes = 4;
    int64_t bucket_bytes = 0;     // beyond the gradients (which are views of the buckets): the sync-each mode's
                                  // sums; stages 2 and 3: the buckets whole while reduced
    int64_t optimizer_bytes = 0;  // AdamW: two moments per parameter (of this rank's slice at zero_stage >= 1),
                                  // 4 bytes each, 2 under runtime.optimizer_dtype bf16 (in every tier)
    // The elements whose moments this rank keeps and steps: its slices when the moments are
    // sharded, every parameter it holds otherwise (what crosses PCIe and the disks is counted
    // from it, in each piece's own dtype).
    int64_t slice_elements = 0;
    // runtime.offload: what leaves the device, per rank and tier (docs/design/offload.md). The
    // moments (optimizer_bytes, then no longer in the peak) go to host memory, or with
    // runtime.offload_dir to its files. On a GPU an fp32 master of the rank's slice goes with
    // them (the host step); on CPU ranks the weights are the master. weight_element_bytes: the
    // device weights' bytes: 4, or 2 where the engine keeps the linear layers' weights in bf16
    // beside the host step's fp32 master (offload on a GPU under bf16; at stage 3 the shards and
    // the gathered units, under all the shards off the device too; the embedding stays fp32 and
    // is counted so). With offload at stage >= 2 on
    // a GPU, the slice sums of the gradients move to host memory when the device cannot keep
    // them (gradients_on_host); otherwise the host holds their copies, made during the last
    // backward (host_gradient_bytes either way). Under the unit order with the optimizer's state
    // in offload_dir they may wait in its file instead when host memory cannot keep them
    // (gradients_in_file: nvme_bytes gains them, the device keeps one unit's, the host two
    // staging slots). `all` (stage 3)
    // moves the rank's weight shard too: the device holds the unit gathered and the next one.
    // On CPU ranks (one memory for both tiers) `fits` counts host_bytes with the peak.
    int64_t weight_element_bytes = 4;
    bool gradients_on_host = false;
    bool gradients_in_file = false;
    int64_t host_moment_bytes = 0;    // optimizer_bytes, moved (their dtype's bytes)
    int64_t host_master_bytes = 0;    // fp32 weights of the slice (under all: the shard's home; with
                                      // bf16 weights the bf16 shards too, beside the master)
    int64_t host_gradient_bytes = 0;
    int64_t host_staging_bytes = 0;   // buffers copies and file reads pass through
    int64_t host_bytes = 0;           // the sum of the four and the unit order's boundaries there
    int64_t nvme_bytes = 0;           // runtime.offload_dir: moments, master (and a bf16 copy under all),
                                      // the gradient sums when gradients_in_file, the unit order's
                                      // boundaries when placement.boundaries is File
    int64_t nvme_gradient_bytes = 0;  // of which the gradient sums
    // The node's share: its ranks' host and NVMe bytes against the target's (0: not checked).
    int64_t ranks_per_node = 1;
    int64_t host_limit_bytes = 0;
    int64_t nvme_limit_bytes = 0;
    bool fits_device = true;
    bool fits_host = true;
    bool fits_nvme = true;
    int64_t activation_bytes = 0; // saved for backward by one micro-batch's forward pass (runtime.dtype's),
                                  // with a recomputed part's again and fp8's larger backward working set
    // The output head's own bytes: with whole logits (runtime.head_chunk_tokens 0) the logits'
    // gradient and softmax, alive at backward start; chunked, one chunk's logits and its
    // log-sum-exp's working copy, and the head weight's fp32 gradient formed in the forward.
    int64_t logits_bytes = 0;
    int64_t head_chunk_tokens = 0;  // tokens per chunk of the head (trainbench/head_chunk.h); 0: whole
    // runtime.window_schedule unit (placement.unit_order): what the window keeps beyond one
    // micro-batch's activations: every block's input (fp32 [m, T, d]) for the K - 1 other
    // micro-batches, (K - 1) x (L + 1) of them, and each micro-batch's gradient handed down from
    // unit to unit, K more; on the device (in peak_bytes). placement.boundaries Host: every
    // micro-batch's inputs and its gradient handed down, K x (L + 2), in host memory
    // (host_boundary_bytes), two on the device (an input and a gradient brought back). File: the
    // K x (L + 2) in offload_dir's file (nvme_boundary_bytes, in nvme_bytes), three in host
    // memory (two written from, one read into), two on the device.
    int64_t boundary_bytes = 0;
    int64_t device_boundary_bytes = 0;  // of them in peak_bytes: all, or the two off the device's
    int64_t host_boundary_bytes = 0;
    int64_t nvme_boundary_bytes = 0;
    // Stage 3: the weight shards' bytes every rank's gathers take in a step, all ranks together
    // (what io/gathered_bytes measures): per micro-batch each rank's shard for the forward and
    // again for the backward but the embedding's, K times; under the unit order once for the
    // window's forwards and once for its backwards, the head once for both.
    int64_t shard_gathered_bytes_per_step = 0;
    int64_t peak_bytes = 0;
    // What each rank sends per optimizer step (ring algorithms: an all-reduce of n bytes sends
    // 2n (W-1)/W, a reduce-scatter or all-gather n (W-1)/W) and the collective calls it makes;
    // 0 on one rank. Stages 0-1 count about one call per 25 MiB gradient bucket, stages 2-3 one
    // per unit.
    int64_t collectives_per_step = 0;
    int64_t bytes_sent_per_step = 0;
    // Expert parallelism: what one micro-batch's token exchanges send from each rank (every MoE
    // layer: the routed copies there and back, in the forward and again in the backward), in
    // bytes_sent_per_step K times.
    int64_t all_to_all_bytes_per_micro_batch = 0;
    int64_t limit_bytes = 0;      // the budget compared against; 0: none known
    bool fits = true;             // every tier
    // The largest micro-batch (dividing the global batch per rank) whose peak fits the budget;
    // 0 when even 1 does not, the configured one when there is no budget.
    int64_t largest_fitting_micro_batch = 0;
};

// Plans `config` against `limit_bytes` per rank (runtime.memory_limit_mb when set wins;
// 0 and no config limit: nothing to fit against).
MemoryPlan planMemory(const RunConfig& config, int64_t limit_bytes = 0);

// What one layer's forward keeps for the backward per token, as the planner counts it for
// `config` (its device, the CPU kernels on or off, runtime.dtype, runtime.expert_parallel):
// the attention sub-block with its input norm, and the feed-forward part with its norm and the
// block output (the table at the top of engine/plan/activation_bytes.cpp).
struct LayerActivationBytes {
    int64_t attention = 0;
    int64_t feed_forward = 0;
};
LayerActivationBytes layerActivationBytesPerToken(const RunConfig& config, int64_t layer);

// A row of n features kept in fp8: n E4M3 bytes and one fp32 scale per 1 x 128 tile (what
// kernels::fp8Bytes gives one row in row tiles).
int64_t fp8RowBytes(int64_t n);

// runtime.dtype fp8's terms for one layer per token, in the forms `config`'s device runs: the
// bytes of the fp32 tensors the fp32 count keeps that fp8 does not (the inputs its projections
// and gated MLPs keep in fp8 instead), and the bytes of the fp8 copies kept. Under fp8,
// layerActivationBytesPerToken = the fp32 count - dropped + fp8, part by part.
// backward_excess: on the CPU, what the fp8 gated node's backward holds beyond the fp32 node's
// while it runs (about 8 x hidden width fp32 per row, measured); the activations count it once
// (activation_bytes.cpp).
struct Fp8LayerTerms {
    int64_t attention_dropped = 0;
    int64_t attention_fp8 = 0;
    int64_t feed_forward_dropped = 0;
    int64_t feed_forward_fp8 = 0;
    int64_t backward_excess = 0;
};
Fp8LayerTerms fp8LayerTerms(const RunConfig& config, int64_t layer);

// One precision's plan at the config's layout: runtime.dtype and runtime.optimizer_dtype set,
// everything else as the config says.
struct PrecisionFit {
    std::string dtype;            // "fp32" | "bf16" | "fp8"
    std::string optimizer_dtype;  // "fp32" | "bf16"
    MemoryPlan plan;              // at the config's micro-batch
    int64_t largest_micro_batch = 0;  // plan.largest_fitting_micro_batch under the same limit
};
// fp32, bf16, fp8, and fp8 with bf16 moments, in that order, against `limit_bytes` as planMemory takes it.
// (fp32 and bf16 plan the same: the planner counts bf16's tensors at 4 bytes.)
std::vector<PrecisionFit> planPrecisions(const RunConfig& config, int64_t limit_bytes = 0);
std::string precisionFitsToJson(const std::vector<PrecisionFit>& fits);

struct TargetMachine;
// The four precisions as planOnTarget plans them (`plan --target`).
std::vector<PrecisionFit> planPrecisionsOnTarget(const RunConfig& config, const TargetMachine& target);

// Plans `config` as it would run on `target` (configOnTarget): the device budget, and the host
// memory and NVMe of a node shared by its ranks.
MemoryPlan planOnTarget(const RunConfig& config, const TargetMachine& target);

// A memory layout: the sharding stage, the recomputation mode, the micro-batch size and the
// expert parallelism.
struct MemoryLayout {
    int64_t zero_stage = 0;
    std::string activation_checkpointing = "none";
    int64_t micro_batch_size = 0;
    int64_t expert_parallel = 1;
    std::string offload = "none";  // runtime.offload
    bool nvme = false;             // runtime.offload_dir set: the offloaded state in files
};

// The layouts in the order of what they cost in time, cheapest first: no recomputation, then
// the feed-forward parts recomputed (about 12 % slower on the small preset), then whole blocks
// (about 25 %), and within each the stages 0 to 2, then expert parallelism at stages 0, 1
// (DeepSeek-V3's layout) and 2 over every EP dividing both the world size and the routed
// experts, smallest first (a micro-batch's tokens exchanged twice per MoE layer each way, a
// tenth of what stage 3 gathers for a DeepSeek config), then stage 3 (every unit's weights
// gathered twice per micro-batch), then stage 3 with expert parallelism (a unit gathers its
// share of the experts only: what the largest models need, whose one MoE block of experts
// exceeds a device).
std::vector<MemoryLayout> layoutsByCost(const RunConfig& config);

// The share of the budget the layout advice keeps free: the planner's error on the layouts it
// is measured against stays within it (docs/BENCHMARKS.md).
constexpr double kLayoutSafetyMargin = 0.1;

// What fits a budget, with kLayoutSafetyMargin of it to spare. `cheapest`: at the config's
// world size, the first layout of
// layoutsByCost() whose largest fitting micro-batch is at least 1, with that micro-batch (and
// the plan there); micro_batch_size 0 when none fits. `fewest_ranks`: the fewest ranks (powers
// of two up to 4096, memory per rank the same budget) that can train the config at
// micro_batch_size 1, with the cheapest layout that does it; 0 when none does.
struct LayoutAdvice {
    int64_t limit_bytes = 0;
    MemoryLayout cheapest;
    MemoryPlan cheapest_plan;
    int64_t fewest_ranks = 0;
    MemoryLayout fewest_ranks_layout;
    MemoryPlan fewest_ranks_plan;
};
LayoutAdvice adviseLayout(const RunConfig& config, int64_t limit_bytes);

// What fits a target machine. The layouts without offload first: of those that fit, the one whose
// predicted step is shortest when every rate of the target is known, else the cheapest in the
// cost order as above; when
// none fits its devices (a GPU target, or a runtime.offload_dir), the offload layouts: optimizer
// then all, host memory then NVMe, each over layoutsByCost; of those that fit every tier, the
// one whose predicted step is shortest (the first when the target's rates are unknown). When
// nothing fits, `why_none` says which tier stopped the layout that came closest.
struct TargetAdvice {
    LayoutAdvice layout;      // fewest_ranks: without offload, as adviseLayout
    bool offloaded = false;   // the cheapest needs offload
    std::string why_none;
};
TargetAdvice adviseOnTarget(const RunConfig& config, const TargetMachine& target);
std::string layoutAdviceToJson(const LayoutAdvice& advice);
// The config with a layout's stage, recomputation and micro-batch (K keeps the global batch
// when it can; the planner only needs m and W).
RunConfig withLayout(RunConfig config, const MemoryLayout& layout);
// The directory withLayout names for a layout whose state goes to NVMe when the config has none.
inline constexpr const char* kPlannedOffloadDir = "<offload_dir>";

// One JSON object, every field above (the `plan` command's output).
std::string memoryPlanToJson(const MemoryPlan& plan);

// The attention cache of decoding (generate), sized as the reference sizes it: model.max_batch_size
// rows of model.max_seq_len positions in every layer, allocated whole. Two forms:
// - naive: each head's key (qk_nope_head_dim + qk_rope_head_dim) and value (v_head_dim), per
//   token and layer: what the guides' `k_cache` / `v_cache` formula counts;
// - absorbed: the compressed latent (kv_lora_rank) and the one rotary key shared by the heads
//   (qk_rope_head_dim), per token and layer: what MLA really needs.
// Bytes at `element_bytes` each: 2 (bf16) is the reference's; trainbench's generate keeps the
// cache in the weights' dtype (fp32: 4).
struct InferenceCachePlan {
    int64_t rows = 0;       // model.max_batch_size
    int64_t positions = 0;  // model.max_seq_len
    int64_t layers = 0;
    int64_t element_bytes = 2;
    int64_t naive_bytes_per_token = 0;     // over all layers
    int64_t absorbed_bytes_per_token = 0;  // over all layers
    int64_t naive_bytes = 0;               // rows x positions tokens
    int64_t absorbed_bytes = 0;
};
InferenceCachePlan planInferenceCache(const ModelConfig& model, int64_t element_bytes = 2);
std::string inferenceCachePlanToJson(const InferenceCachePlan& plan);

// Refuses, before anything is allocated, a config that cannot fit: with runtime.memory_limit_mb
// set, when even micro_batch_size 1 exceeds it (a larger m backs off at run time); otherwise when
// the configured micro-batch exceeds the device's memory (`device_bytes`; 0: unknown, no check),
// since nothing would catch that out-of-memory. Throws ConfigError with the estimate, the
// memory available and what would fit.
void requirePlanFits(const RunConfig& config, int64_t device_bytes);

// What to try when a rank runs out of memory with this config, in one sentence.
std::string outOfMemoryAdvice(const RunConfig& config);

}  // namespace trainbench

// Floor: plan/ (engine/README.md)
