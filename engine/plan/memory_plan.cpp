// The memory planner: weights, gradients, buckets, AdamW moments, the offload tiers and the
// collectives per rank from the config alone. What the activations keep, per token and in every
// precision (runtime.dtype fp8's terms included), is counted in plan/activation_bytes.cpp.
#include "trainbench/memory_plan.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/activation_bytes.h"
#include "plan/unit_elements.h"
#include "trainbench/compute_dtype.h"
#include "trainbench/config_io.h"
#include "trainbench/device_type.h"
#include "trainbench/divisors.h"
#include "trainbench/head_chunk.h"
#include "trainbench/param_count.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

namespace trainbench {
namespace {

using activations::clampedProduct;
using activations::kFloat;
using activations::kMoreThanAnyDevice;
using units::largestAdjacentUnitsElements;
using units::largestUnitElements;

// The gradient buckets of `bytes` of gradients at stages 0 and 1: a first one of 1 MiB, then
// 25 MiB each (parallel/gradient_buckets.h). Stages 2 and 3 have one per unit instead.
int64_t bucketsOf(int64_t bytes) {
    const int64_t first = 1 << 20, rest = 25 << 20;
    return 1 + std::max<int64_t>(0, (bytes - first + rest - 1) / rest);
}

// What one gather of `elements` weights moves at stage 3: their device dtype (bf16 linear layers
// beside the placement's fp32 master; the `embedding` elements among them stay fp32), else fp32.
double gatheredBytes(const MemoryPlan& p, int64_t elements, int64_t embedding) {
    if (!p.placement.bf16_device_weights) return double(elements) * kFloat;
    return double(elements - embedding) * 2.0 + double(embedding) * kFloat;
}

// The collectives of one optimizer step on each rank and the bytes it sends (docs/design/
// layouts.md section 7), from the gradient bytes G: stage 0 all-reduces G (every micro-batch in the
// sync-each mode); stage 1 reduce-scatters G and all-gathers the weights; stage 2
// reduce-scatters G every micro-batch; stage 3 all-gathers every unit before its forward and
// again before its backward (but the embedding's) and reduce-scatters it, every micro-batch;
// the gathers move the weights in their device dtype (gatheredBytes), the reductions fp32.
// Besides: one all-reduce of the window's statistics, and at stages >= 1 one of the norm.
//
// Expert parallelism (stage 0) all-reduces the dense gradients over W and each rank's experts'
// over its W / EP replicas, and per micro-batch and MoE layer makes five exchanges in its expert
// group (the counts, the tokens there and back; the two backward), plus one all-reduce of the
// experts' squared norms a step. At stage 3 every unit's dense part is gathered and
// reduce-scattered over W as without EP, and every MoE block's experts over the replicas
// (each gathered twice and reduce-scattered once per micro-batch).
void planLayoutCollectives(MemoryPlan& p, const RunConfig& config, const ParamCount& counts);

// The layout's collectives, and with multi-token prediction the window's first all-reduce (its
// counted targets per depth, before the first backward: train/rank_trainer.cpp).
void planCollectives(MemoryPlan& p, const RunConfig& config, const ParamCount& counts) {
    planLayoutCollectives(p, config, counts);
    if (p.world_size > 1 && config.model.n_mtp_depth > 0) p.collectives_per_step += 1;
}

void planLayoutCollectives(MemoryPlan& p, const RunConfig& config, const ParamCount& counts) {
    const int64_t W = p.world_size, K = p.gradient_accumulation_steps, EP = p.expert_parallel;
    if (W <= 1) return;
    if (EP > 1) {
        const ModelConfig& c = config.model;
        // (the multi-token-prediction modules' MoE blocks exchange and reduce as the others do)
        const int64_t moe_layers = c.n_layers - c.n_dense_layers + (c.n_dense_layers < c.n_layers ? c.n_mtp_depth : 0);
        const int64_t R = W / EP;
        const int64_t dense = (counts.total - counts.routed_experts) * kFloat;
        const int64_t experts = counts.routed_experts / EP * kFloat;
        const int64_t rows = p.micro_batch_size * p.seq_len * c.n_activated_experts;
        p.all_to_all_bytes_per_micro_batch = static_cast<int64_t>(std::min(
            4.0 * double(moe_layers) * double(rows) * double(c.dim * kFloat) * double(EP - 1) / double(EP),
            double(kMoreThanAnyDevice)));
        // Stage 1: reduce-scatters and all-gathers instead of all-reduces (the same bytes), and
        // the slices' squared norms summed over the world, the replicas and the group (the
        // replica group's calls made even when it is one rank).
        // Stage 2: every micro-batch's buckets reduce-scattered (each set over its ranks), the
        // weights all-gathered once; the buckets are the units' dense parts (every unit has one)
        // and the MoE blocks' experts.
        const Sharding& sharded = p.placement.sharded;
        // (and the noise scale's one all-reduce of the routed experts' small batches in the group)
        const int64_t exchanges = 5 * moe_layers * K + (config.train.noise_scale && K * W >= 2 ? 1 : 0);
        if (sharded.weights)
            p.collectives_per_step = K * (3 * (c.n_layers + 2) - 1 + 3 * moe_layers) + 1 + 3 + exchanges;
        else if (sharded.gradients)
            p.collectives_per_step = (K + 1) * (c.n_layers + 2 + moe_layers) + 1 + 3 + exchanges;
        else if (sharded.moments)
            p.collectives_per_step = 2 * bucketsOf(dense) + 1 + exchanges + 3 + bucketsOf(experts) * (R > 1 ? 2 : 1);
        else
            p.collectives_per_step = bucketsOf(dense) + 1 + exchanges + 1 + (R > 1 ? bucketsOf(experts) : 0);
        // Stages 0-2: reduce-scatters (or all-reduces) and the all-gather, each set over its
        // ranks; stage 3: per micro-batch the gathers before forward and backward and the
        // reduce-scatter (the embedding's backward gathers nothing).
        const double rounds = sharded.gradients ? double(K + 1) : 2.0;
        const double dense_gathered = gatheredBytes(p, counts.total - counts.routed_experts, counts.embedding);
        const double experts_gathered = gatheredBytes(p, counts.routed_experts / EP, 0);
        const double dense_sent = sharded.weights ? double(K) * (2.0 * dense_gathered - double(counts.embedding * kFloat) +
                                                                 double(dense))
                                                  : rounds * double(dense);
        const double expert_sent =
            sharded.weights ? double(K) * (2.0 * experts_gathered + double(experts)) : rounds * double(experts);
        p.bytes_sent_per_step = static_cast<int64_t>(std::min(double(W - 1) / double(W) * dense_sent +
                                                                  (R > 1 ? double(R - 1) / double(R) * expert_sent : 0.0) +
                                                                  double(K) * double(p.all_to_all_bytes_per_micro_batch),
                                                              double(kMoreThanAnyDevice)));
        return;
    }
    const int64_t grads = counts.total * kFloat;
    const double share = double(W - 1) / double(W);
    const int64_t buckets = bucketsOf(grads);
    const int64_t units = config.model.n_layers + 2;
    double sent = 0;
    const Sharding& sharded = p.placement.sharded;
    if (sharded.weights) {
        // Each micro-batch gathers every unit before its forward and again before its backward
        // (the embedding's backward gathers nothing) in the device weights' dtype, and
        // reduce-scatters the fp32 gradients.
        p.collectives_per_step = K * (3 * units - 1) + 2;
        const double embedding = double(counts.embedding) * kFloat;
        sent = double(K) * share * (2.0 * gatheredBytes(p, counts.total, counts.embedding) - embedding + double(grads));
    } else if (sharded.gradients) {
        p.collectives_per_step = (K + 1) * units + 2;  // a bucket per unit
        sent = double(K + 1) * share * double(grads);
    } else if (sharded.moments) {
        p.collectives_per_step = 2 * buckets + 2;
        sent = 2.0 * share * double(grads);
    } else {
        const int64_t rounds = config.train.sync_each_micro_batch ? K : 1;
        p.collectives_per_step = rounds * buckets + 1;
        sent = 2.0 * share * double(grads) * double(rounds);
    }
    p.bytes_sent_per_step = static_cast<int64_t>(std::min(sent, double(kMoreThanAnyDevice)));
}

// What a plan is checked against: the device's budget, and a node's host memory and NVMe shared
// by its ranks (0: not checked; NVMe -1: not checked, 0: none there).
struct TierLimits {
    int64_t device = 0;
    int64_t host_per_node = 0;
    int64_t nvme_per_node = -1;
    int64_t ranks_per_node = 1;
};

// What the planner found cannot stay on the device (the PlacementQuery's budget answers).
struct OffDevice {
    bool gradient_sums = false;
    bool gradient_sums_file = false;  // nor in host memory: in offload_dir's file
    bool boundaries = false;
    bool boundaries_file = false;  // nor in host memory (on CPU ranks, the one memory): in offload_dir's file
    bool unit_order_fits_nowhere = false;
};

MemoryPlan planFor(const RunConfig& config, int64_t micro_batch, const TierLimits& limits, OffDevice off);

// The plan with the unit order's boundary activations and then the gradients' slice sums on the
// device, or in host memory when the placement allows it and the device cannot keep them.
MemoryPlan planMovingOffDevice(const RunConfig& config, int64_t micro_batch, const TierLimits& limits, OffDevice off) {
    MemoryPlan plan = planFor(config, micro_batch, limits, off);
    if (!plan.fits_device && plan.placement.unit_order && plan.boundary_bytes > 0 &&
        deviceTypeOf(config.runtime) == DeviceType::Cuda) {
        off.boundaries = true;
        plan = planFor(config, micro_batch, limits, off);
    }
    if (!plan.fits_device && plan.placement.gradientSumsMayLeaveDevice()) {
        off.gradient_sums = true;
        plan = planFor(config, micro_batch, limits, off);
    }
    // Where host memory (or on CPU ranks the one memory) cannot keep them either, the unit order
    // writes each unit's finished sums to offload_dir.
    const OffDevice sums_not_in_file = off;
    if (!plan.fits && plan.placement.gradientSumsMayGoToFile()) {
        off.gradient_sums_file = true;
        plan = planFor(config, micro_batch, limits, off);
    }
    // Where that is not enough either, the boundaries go to the file (written once, read back at
    // each use): alone if that fits, the sums kept where they were, else with the sums.
    if (!plan.fits && plan.placement.unit_order && plan.boundary_bytes > 0 && !config.runtime.offload_dir.empty()) {
        OffDevice boundaries_alone = sums_not_in_file;
        boundaries_alone.boundaries_file = true;
        const MemoryPlan alone = planFor(config, micro_batch, limits, boundaries_alone);
        if (alone.fits || !off.gradient_sums_file) return alone;
        off.boundaries_file = true;
        plan = planFor(config, micro_batch, limits, off);
    }
    return plan;
}

// That plan; under window_schedule auto, the micro-batch order's where the unit order fits nowhere.
MemoryPlan planFor(const RunConfig& config, int64_t micro_batch, const TierLimits& limits) {
    const MemoryPlan plan = planMovingOffDevice(config, micro_batch, limits, OffDevice{});
    if (!plan.fits && plan.placement.unit_order && windowSchedule(config.runtime) == WindowSchedule::Auto) {
        OffDevice micro_batch_order;
        micro_batch_order.unit_order_fits_nowhere = true;
        const MemoryPlan fallback = planMovingOffDevice(config, micro_batch, limits, micro_batch_order);
        if (fallback.fits) return fallback;
    }
    return plan;
}

MemoryPlan planFor(const RunConfig& config, int64_t micro_batch, int64_t limit_bytes) {
    return planFor(config, micro_batch, TierLimits{limit_bytes});
}

MemoryPlan planFor(const RunConfig& config, int64_t micro_batch, const TierLimits& limits, OffDevice off) {
    MemoryPlan p;
    // Where each piece of state lives: the rule the layouts build from (engine/parallel/placement.cpp).
    PlacementQuery query;
    query.device = deviceTypeOf(config.runtime);
    query.gradient_sums_off_device = off.gradient_sums || off.gradient_sums_file;
    query.gradient_sums_in_file = off.gradient_sums_file;
    query.boundaries_off_device = off.boundaries;
    query.boundaries_in_file = off.boundaries_file;
    query.unit_order_fits_nowhere = off.unit_order_fits_nowhere;
    p.placement = placementFor(config, query);
    const Placement& place = p.placement;
    p.micro_batch_size = micro_batch;
    p.world_size = config.runtime.world_size;
    p.zero_stage = config.runtime.zero_stage;
    p.activation_checkpointing = config.runtime.activation_checkpointing;
    p.expert_parallel = std::max<int64_t>(1, config.runtime.expert_parallel);
    p.gradient_accumulation_steps = config.globalBatch() / std::max<int64_t>(1, micro_batch * p.world_size);
    p.seq_len = config.train.seq_len;
    p.global_batch_size = config.globalBatch();
    p.tokens_per_step = config.tokensPerStep();
    const ParamCount counts = countParameters(config.model);
    // Under expert parallelism a rank holds the dense weights and its share of the experts.
    const int64_t params = counts.total - counts.routed_experts + counts.routed_experts / p.expert_parallel;
    const int64_t slice_elements = (params + p.world_size - 1) / p.world_size;
    // Stage 3 holds its shard of every unit and one unit gathered whole at a time.
    const int64_t largest_unit = largestUnitElements(config.model, counts, p.expert_parallel) * kFloat;
    // The gradients are views of the reduction buckets (engine/parallel/gradient_buckets.h), so
    // the buckets cost nothing of their own; only the sync-each mode keeps running sums beside.
    // Stage 2 keeps the sums of this rank's slices (4P/W) and, during a backward, about two
    // buckets whole (engine/parallel/gradient_buckets.h) plus autograd's own copy of the
    // gradient being moved in. Its buckets are the units: at the start of the backward the
    // head's unit fills, with the head's own gradient, beside the logits' gradient; past the
    // head the logits' gradient is gone, and the two adjacent units largest together are whole
    // with the largest parameter once more.
    // Stage 3's buckets are its units. At the start of the backward the head's gradients form
    // (one unit) beside the logits' gradient; at every later boundary one unit's gradients form
    // while the next one's are in flight, and the logits' gradient is gone: the second unit
    // counts for what it exceeds that.
    const int64_t largest_param = std::max(counts.head, counts.embedding) * kFloat;
    const int64_t bucket = std::max<int64_t>(25 << 20, largest_param);
    // What a rank's slices hold: of every parameter it holds, 1/W; under expert parallelism the
    // dense ones over W, the experts' over their W / EP replicas.
    int64_t held_slice_elements = slice_elements;
    if (p.expert_parallel > 1) {
        const int64_t replicas = std::max<int64_t>(1, p.world_size / p.expert_parallel);
        const int64_t dense = counts.total - counts.routed_experts, experts = counts.routed_experts / p.expert_parallel;
        held_slice_elements = (dense + p.world_size - 1) / p.world_size + (experts + replicas - 1) / replicas;
    }
    // The CPU kernels run on the CPU in either precision: bf16 there rounds only their products'
    // operands, the tensors they keep stay fp32 (kernels/product_precision.h); fp8 keeps the
    // projections' and gated MLPs' inputs in fp8.
    const activations::Layout layout = activations::layoutOf(config);
    const bool offloaded = place.moments != Tier::Device;
    const bool weights_off = place.weightsOffDevice();
    const bool on_nvme = place.moments == Tier::File;
    // fp32 weights on the device (bf16 runs under autocast), except where the placement holds the
    // linear layers' weights in bf16 beside the host step's fp32 master, at stage 3 their shards
    // and gathered units too. The embedding stays fp32 there and is counted so (the norms and the
    // router too: a few MB, not counted).
    const bool bf16_weights = place.bf16_device_weights;
    p.weight_element_bytes = bf16_weights ? 2 : 4;
    const int64_t unit_elements = largest_unit / kFloat;
    // A unit gathered whole: the largest in its dtype (with bf16 weights the embedding's unit
    // may be the largest, at 4 bytes).
    const int64_t unit_bytes = bf16_weights ? std::max(unit_elements * 2, counts.embedding * kFloat) : largest_unit;
    // The embedding's 2 bytes more than the others: whole at stages 1 and 2, its 1/W at stage 3.
    const int64_t embedding_kept = !bf16_weights ? 0 : place.sharded.weights ? (counts.embedding + p.world_size - 1) / p.world_size * 2
                                                                   : counts.embedding * 2;
    // Offload all: the unit gathered and, on a GPU, the next one arriving (CPU ranks gather from
    // the host tier directly: one memory).
    p.weight_bytes = weights_off  ? (layout.on_cpu ? 1 : 2) * unit_bytes
                     : place.sharded.weights ? held_slice_elements * p.weight_element_bytes + embedding_kept + unit_bytes
                                  : params * p.weight_element_bytes + embedding_kept;
    p.gradients_on_host = place.gradient_sums == Tier::Host;
    p.gradients_in_file = place.gradient_sums == Tier::File;
    const int64_t gs = place.sharded.gradients && isChoice(config.runtime.gradient_sum_dtype, GradientSumDtype::Bf16) ? 2 : kFloat;
    p.gradient_sum_element_bytes = gs;
    // In a file, or on the host under the unit order: the unit whose micro-batches are being
    // summed keeps its slice on the device.
    const bool one_unit_sums = p.gradients_in_file || (p.gradients_on_host && place.unit_order);
    p.gradient_bytes = one_unit_sums             ? (largest_unit + p.world_size - 1) / p.world_size * gs / kFloat
                       : p.gradients_on_host     ? 0
                       : place.sharded.gradients ? held_slice_elements * gs
                                                 : params * kFloat;
    const int64_t tokens = micro_batch * p.seq_len;
    p.head_chunk_tokens = headChunkRows(config.model, config.runtime.head_chunk_tokens, tokens);
    // Whole: the logits' gradient and softmax [tokens, V]. Chunked: a chunk's logits and the
    // log-sum-exp's working copy of them, and the head weight's fp32 gradient from the forward.
    p.logits_bytes = p.head_chunk_tokens > 0
                         ? clampedProduct(2 * kFloat * p.head_chunk_tokens, config.model.vocab_size) + counts.head * kFloat
                         : clampedProduct(2 * kFloat * tokens, config.model.vocab_size);
    const int64_t head_unit = (counts.head + config.model.dim) * kFloat;
    const int64_t adjacent_units = largestAdjacentUnitsElements(config.model, counts, p.expert_parallel) * kFloat;
    const int64_t stage2_buckets =
        std::max<int64_t>(head_unit + counts.head * kFloat, adjacent_units + largest_param - p.logits_bytes);
    p.bucket_bytes = place.sharded.weights     ? largest_unit + std::max<int64_t>(0, largest_unit - p.logits_bytes)
                     : place.sharded.gradients ? stage2_buckets
                     : p.world_size > 1 && config.train.sync_each_micro_batch ? params * kFloat
                                                                               : 0;
    // Stages 1 and up keep the moments of this rank's slices only.
    const int64_t moment_elements = place.sharded.moments ? held_slice_elements : params;
    // runtime.optimizer_dtype bf16: both moments stored in bf16 (the update computed in fp32), in
    // every tier they live in: the device, host memory or the NVMe files.
    const int64_t moment_bytes = isChoice(config.runtime.optimizer_dtype, OptimizerDtype::Bf16) ? 2 : kFloat;
    p.optimizer_bytes = 2 * moment_elements * moment_bytes;
    p.slice_elements = moment_elements;
    p.activation_bytes =
        activations::activationBytes(config.model, tokens, recomputation(config.runtime), p.expert_parallel, layout);
    if (place.unit_order) {
        const int64_t K = std::max<int64_t>(1, p.gradient_accumulation_steps);
        const int64_t boundary = clampedProduct(tokens * kFloat, config.model.dim);  // one [m, T, d] in fp32
        p.boundary_bytes = clampedProduct(boundary, (K - 1) * (config.model.n_layers + 1) + K);
        // Off the device every micro-batch's inputs go (K x (L + 1)) and its gradient handed down
        // (K more); the device keeps the input and the gradient brought back for the unit at hand.
        const int64_t every_one = clampedProduct(boundary, K * (config.model.n_layers + 2));
        p.device_boundary_bytes = place.boundaries == Tier::Device ? p.boundary_bytes : clampedProduct(boundary, 2);
        if (place.boundaries == Tier::Host) p.host_boundary_bytes = every_one;
        if (place.boundaries == Tier::File) {
            p.nvme_boundary_bytes = every_one;
            p.host_boundary_bytes = clampedProduct(boundary, 3);  // BoundaryFile's buffers
        }
    }
    // Off the device, per rank. The master is the rank's slice of fp32 weights: on a GPU the
    // optimizer's copy (the device's weights come back from it), under all the shard's home.
    if (offloaded) {
        const bool master = place.master != Tier::Device;
        // Under all with bf16 weights the shards off the device are bf16 (the embedding's fp32),
        // beside the fp32 master.
        const int64_t bf16_shards = weights_off && bf16_weights ? moment_elements * 2 + embedding_kept : 0;
        const int64_t master_bytes = (master ? moment_elements * kFloat : 0) + bf16_shards;
        // What a copy or a file read passes through: the bucket being moved and the next.
        // (stages 2 and 3 bucket by unit: the widest is the largest unit)
        const int64_t widest = place.sharded.gradients ? largest_unit : std::min<int64_t>(params * kFloat, bucket);
        const int64_t bucket_slice = (widest + p.world_size - 1) / p.world_size;
        int64_t staging = layout.on_cpu ? 0 : 2 * bucket_slice;
        // Stage 3 with the shards on the device in bf16: the master rounded into two bf16 slots.
        if (bf16_weights && place.sharded.weights && !weights_off) staging += bucket_slice;
        if (on_nvme) {
            // Each moment region is whole 4 KiB blocks; two slots of the widest bucket's slice
            // (moments, in their dtype, and the fp32 master with them), and under all the next
            // unit's shard.
            staging += 2 * bucket_slice * (2 * moment_bytes + (master ? kFloat : 0)) / kFloat;
            if (weights_off) staging += 2 * (unit_elements + p.world_size - 1) / p.world_size * p.weight_element_bytes;
            p.nvme_bytes = p.optimizer_bytes + master_bytes;
            if (p.gradients_in_file) {
                // the sums of the rank's slices, and two staging slots of the widest
                p.nvme_gradient_bytes = held_slice_elements * gs;
                p.nvme_bytes += p.nvme_gradient_bytes;
                staging += 2 * bucket_slice * gs / kFloat;
            }
        } else {
            p.host_moment_bytes = p.optimizer_bytes;
            p.host_master_bytes = master_bytes;
        }
        // The slice sums on the host: kept there (gradients_on_host), or under the host step their
        // copies, made as the last backward finishes each unit (sharded gradients) or each
        // bucket's reduce-scatter (sharded moments over several ranks).
        const bool copied_down =
            place.host_step && !p.gradients_in_file && (place.sharded.gradients || p.world_size > 1);
        p.host_gradient_bytes = !p.gradients_on_host && !copied_down ? 0
                                : place.sharded.gradients             ? held_slice_elements * gs
                                                                      : held_slice_elements * kFloat;
        p.host_staging_bytes = staging;
        p.host_bytes = p.host_moment_bytes + p.host_master_bytes + p.host_gradient_bytes + p.host_staging_bytes;
    }
    p.host_bytes += p.host_boundary_bytes;
    p.nvme_bytes += p.nvme_boundary_bytes;
    if (place.sharded.weights) {
        const int64_t K = std::max<int64_t>(1, p.gradient_accumulation_steps);
        const int64_t shard = held_slice_elements * p.weight_element_bytes + embedding_kept;
        const int64_t embedding_shard = (counts.embedding + p.world_size - 1) / p.world_size * kFloat;
        // (the unit order holds the head once for its forwards and backwards together)
        const int64_t head_shard = (counts.head + config.model.dim + p.world_size - 1) / p.world_size * p.weight_element_bytes;
        const int64_t per_rank = place.unit_order ? 2 * shard - embedding_shard - head_shard
                                                  : K * (2 * shard - embedding_shard);
        p.shard_gathered_bytes_per_step = clampedProduct(per_rank, p.world_size);
    }
    p.peak_bytes = p.weight_bytes + p.gradient_bytes + p.bucket_bytes + (offloaded ? 0 : p.optimizer_bytes) +
                   p.activation_bytes + p.logits_bytes + p.device_boundary_bytes;
    planCollectives(p, config, counts);
    p.limit_bytes = limits.device;
    // On CPU ranks the host tier is the same memory as the device's: what offload keeps there
    // still counts against the budget.
    p.fits_device = limits.device <= 0 || p.peak_bytes + (layout.on_cpu ? p.host_bytes : 0) <= limits.device;
    p.ranks_per_node = std::max<int64_t>(1, limits.ranks_per_node);
    p.host_limit_bytes = std::max<int64_t>(0, limits.host_per_node);
    p.nvme_limit_bytes = std::max<int64_t>(0, limits.nvme_per_node);
    p.fits_host = limits.host_per_node <= 0 || __int128(p.host_bytes) * p.ranks_per_node <= limits.host_per_node;
    p.fits_nvme = limits.nvme_per_node < 0 || __int128(p.nvme_bytes) * p.ranks_per_node <= limits.nvme_per_node;
    p.fits = p.fits_device && p.fits_host && p.fits_nvme;
    return p;
}

}  // namespace

namespace {

// The plan at the config's micro-batch, and the largest micro-batch that fits every tier.
MemoryPlan planWithLargest(const RunConfig& config, const TierLimits& limits) {
    MemoryPlan plan = planFor(config, config.train.micro_batch_size, limits);
    const int64_t per_rank = config.globalBatch() / std::max<int64_t>(1, config.runtime.world_size);
    const bool limited = limits.device > 0 || limits.host_per_node > 0 || limits.nvme_per_node >= 0;
    plan.largest_fitting_micro_batch = limited ? 0 : config.train.micro_batch_size;
    if (limited) {
        for (int64_t m : divisorsOf(per_rank))
            if (m > plan.largest_fitting_micro_batch && planFor(config, m, limits).fits)
                plan.largest_fitting_micro_batch = m;
    }
    return plan;
}

TierLimits limitsOf(const TargetMachine& target, int64_t device_bytes) {
    TierLimits limits;
    limits.device = device_bytes;
    limits.host_per_node = target.host_memory_bytes;
    limits.nvme_per_node = target.nvme_bytes;
    limits.ranks_per_node = target.ranksPerNode();
    return limits;
}

}  // namespace

MemoryPlan planMemory(const RunConfig& config, int64_t limit_bytes) {
    if (config.runtime.memory_limit_mb > 0) limit_bytes = config.runtime.memory_limit_mb * 1024 * 1024;
    TierLimits limits{limit_bytes};
    limits.ranks_per_node = config.runtime.world_size;  // every rank on this machine
    return planWithLargest(config, limits);
}

MemoryPlan planOnTarget(const RunConfig& config, const TargetMachine& target) {
    const RunConfig placed = configOnTarget(config, target);
    const int64_t device = placed.runtime.memory_limit_mb > 0 ? placed.runtime.memory_limit_mb * 1024 * 1024
                                                              : target.device_memory_bytes;
    return planWithLargest(placed, limitsOf(target, device));
}

std::vector<MemoryLayout> layoutsByCost(const RunConfig& config) {
    const ModelConfig& c = config.model;
    const int64_t W = config.runtime.world_size, E = c.n_routed_experts;
    const bool moe = E > 0 && c.n_dense_layers < c.n_layers;
    std::vector<MemoryLayout> out;
    // The recomputation modes in their table order, which is also their cost in time.
    for (const std::string& recompute : choiceNames<Recomputation>()) {
        for (int64_t stage = 0; stage <= 2; ++stage) out.push_back({stage, recompute, 0, 1});
        for (int64_t stage = 0; stage <= 2; ++stage)
            for (int64_t ep = 2; moe && ep <= std::min(W, E); ++ep)
                if (W % ep == 0 && E % ep == 0) out.push_back({stage, recompute, 0, ep});
        out.push_back({3, recompute, 0, 1});
        for (int64_t ep = 2; moe && ep <= std::min(W, E); ++ep)
            if (W % ep == 0 && E % ep == 0) out.push_back({3, recompute, 0, ep});
    }
    return out;
}

RunConfig withLayout(RunConfig config, const MemoryLayout& layout) {
    config.runtime.zero_stage = layout.zero_stage;
    config.runtime.expert_parallel = std::max<int64_t>(1, layout.expert_parallel);
    config.runtime.activation_checkpointing = layout.activation_checkpointing;
    if (layout.micro_batch_size > 0) {
        const int64_t global = config.globalBatch();
        config.train.micro_batch_size = layout.micro_batch_size;
        const int64_t per_step = layout.micro_batch_size * std::max<int64_t>(1, config.runtime.world_size);
        config.train.gradient_accumulation_steps = std::max<int64_t>(1, global / per_step);
    }
    // Stage 0's debugging mode has no meaning once anything is sharded.
    if (layout.zero_stage >= 1) config.train.sync_each_micro_batch = false;
    config.runtime.offload = layout.offload;
    if (isChoice(layout.offload, Offload::None) || !layout.nvme) config.runtime.offload_dir.clear();
    else if (config.runtime.offload_dir.empty()) config.runtime.offload_dir = kPlannedOffloadDir;
    return config;
}

LayoutAdvice adviseLayout(const RunConfig& config, int64_t limit_bytes) {
    LayoutAdvice advice;
    advice.limit_bytes = config.runtime.memory_limit_mb > 0 ? config.runtime.memory_limit_mb * 1024 * 1024 : limit_bytes;
    if (advice.limit_bytes <= 0) return advice;
    const int64_t usable = static_cast<int64_t>(double(advice.limit_bytes) * (1.0 - kLayoutSafetyMargin));
    RunConfig unlimited = config;  // the usable share is the budget here, not runtime.memory_limit_mb
    unlimited.runtime.memory_limit_mb = 0;
    for (const MemoryLayout& layout : layoutsByCost(unlimited)) {
        const RunConfig candidate = withLayout(unlimited, layout);
        const MemoryPlan plan = planMemory(candidate, usable);
        if (plan.largest_fitting_micro_batch < 1) continue;
        advice.cheapest = layout;
        advice.cheapest.micro_batch_size = plan.largest_fitting_micro_batch;
        advice.cheapest_plan = planFor(withLayout(unlimited, advice.cheapest), advice.cheapest.micro_batch_size, usable);
        break;
    }
    for (int64_t ranks = 1; ranks <= 4096 && advice.fewest_ranks == 0; ranks *= 2) {
        RunConfig spread = unlimited;
        spread.runtime.world_size = ranks;
        for (MemoryLayout layout : layoutsByCost(spread)) {
            layout.micro_batch_size = 1;
            const MemoryPlan plan = planFor(withLayout(spread, layout), 1, usable);
            if (!plan.fits) continue;
            advice.fewest_ranks = ranks;
            advice.fewest_ranks_layout = layout;
            advice.fewest_ranks_plan = plan;
            break;
        }
    }
    return advice;
}

namespace {

// How far a plan exceeds its node's host memory or NVMe, as a ratio (1: just fits).
double overshoot(const MemoryPlan& p) {
    auto ratio = [&](int64_t bytes, int64_t limit) {
        return limit > 0 ? double(bytes) * double(p.ranks_per_node) / double(limit) : bytes > 0 ? 1e30 : 0.0;
    };
    return std::max(p.fits_host ? 0.0 : ratio(p.host_bytes, p.host_limit_bytes),
                    p.fits_nvme ? 0.0 : ratio(p.nvme_bytes, p.nvme_limit_bytes));
}

}  // namespace

TargetAdvice adviseOnTarget(const RunConfig& config, const TargetMachine& target) {
    TargetAdvice advice;
    RunConfig placed = configOnTarget(config, target);
    const int64_t device = placed.runtime.memory_limit_mb > 0 ? placed.runtime.memory_limit_mb * 1024 * 1024
                                                              : target.device_memory_bytes;
    // The layouts, and each with the config's offload (as typed) cleared: offload comes second.
    RunConfig on_device = placed;
    on_device.runtime.offload = choiceName(Offload::None);
    on_device.runtime.offload_dir.clear();
    advice.layout = adviseLayout(on_device, device);
    RunConfig unlimited = on_device;
    unlimited.runtime.memory_limit_mb = 0;
    const int64_t usable = static_cast<int64_t>(double(device) * (1.0 - kLayoutSafetyMargin));
    // A layout at its largest micro-batch within `limits`, with its plan and predicted step;
    // nothing when even micro_batch_size 1 does not fit.
    struct Fitted {
        MemoryLayout layout;
        MemoryPlan plan;
        double step_s = 0;
    };
    auto at = [&](MemoryLayout layout, int64_t micro_batch, const TierLimits& limits) {
        layout.micro_batch_size = micro_batch;
        const RunConfig chosen = withLayout(unlimited, layout);
        Fitted f{layout, planFor(chosen, micro_batch, limits)};
        f.step_s = predictStepTime(chosen, f.plan, target).step_s;
        return f;
    };
    auto fitted = [&](MemoryLayout layout, const TierLimits& limits) -> std::optional<Fitted> {
        const RunConfig config_layout = withLayout(unlimited, layout);
        const MemoryPlan largest = planWithLargest(config_layout, limits);
        if (largest.largest_fitting_micro_batch < 1) return std::nullopt;
        Fitted f = at(layout, largest.largest_fitting_micro_batch, limits);
        // window_schedule auto runs the unit order at a micro-batch where it fits, the micro-batch
        // order where it does not: where the largest micro-batch took the latter, the unit order
        // at its own largest (smaller) one may be the faster step.
        if (windowSchedule(config_layout.runtime) == WindowSchedule::Auto && !f.plan.placement.unit_order &&
            recomputation(config_layout.runtime) == Recomputation::Full) {
            RunConfig unit_only = config_layout;
            unit_only.runtime.window_schedule = choiceName(WindowSchedule::Unit);
            const int64_t m = planWithLargest(unit_only, limits).largest_fitting_micro_batch;
            if (m >= 1)
                if (Fitted u = at(layout, m, limits); u.plan.placement.unit_order && u.step_s < f.step_s) f = u;
        }
        return f;
    };
    auto take = [&](const Fitted& f) {
        advice.layout.cheapest = f.layout;
        advice.layout.cheapest_plan = f.plan;
    };
    if (advice.layout.cheapest.micro_batch_size > 0) {
        // With every rate of the target known, the cost order gives way to the predicted step:
        // of the layouts that fit, the fastest (the cost order breaks ties).
        const StepTimePlan first =
            predictStepTime(withLayout(on_device, advice.layout.cheapest), advice.layout.cheapest_plan, target);
        if (!first.unknown.empty()) return advice;
        double best = first.step_s;
        for (const MemoryLayout& layout : layoutsByCost(unlimited))
            if (const auto f = fitted(layout, limitsOf(target, usable)); f && f->step_s < best) {
                best = f->step_s;
                take(*f);
            }
        return advice;
    }
    // Offload: when the devices are GPUs (their memory apart from the host's) or the state can go
    // to disk.
    const bool disk = target.nvme_bytes > 0;
    if (!target.gpu && !disk) {
        advice.why_none = "no layout fits the devices, and offload to host memory saves nothing on CPU ranks "
                          "(one memory): set runtime.offload_dir to plan with a disk";
        return advice;
    }
    TierLimits limits = limitsOf(target, usable);
    if (limits.host_per_node > 0) limits.host_per_node = static_cast<int64_t>(double(limits.host_per_node) * (1.0 - kLayoutSafetyMargin));
    double best_step = 0;
    MemoryPlan closest;  // the first layout whose devices fit, for why_none
    bool device_fitted = false;
    for (const Offload choice : {Offload::Optimizer, Offload::All}) {
        for (const bool nvme : {false, true}) {
            if (nvme && !disk) continue;
            if (!nvme && !target.gpu) continue;
            for (MemoryLayout layout : layoutsByCost(unlimited)) {
                if (layout.zero_stage < (choice == Offload::All ? 3 : 1)) continue;
                layout.offload = choiceName(choice);
                layout.nvme = nvme;
                const auto f = fitted(layout, limits);
                if (!f) {
                    // The closest miss: its devices fit, and it exceeds the node's tiers the least.
                    const MemoryPlan one = planFor(withLayout(unlimited, layout), 1, limits);
                    if (one.fits_device && (!device_fitted || overshoot(one) < overshoot(closest)))
                        device_fitted = true, closest = one;
                    continue;
                }
                if (advice.offloaded && f->step_s >= best_step) continue;
                advice.offloaded = true;
                best_step = f->step_s;
                take(*f);
            }
        }
    }
    if (advice.offloaded) return advice;
    auto gib = [](double bytes) { return std::to_string(int64_t(bytes / (1024.0 * 1024.0 * 1024.0) + 0.5)) + " GiB"; };
    if (!device_fitted) {
        advice.why_none = "no layout fits the devices even with offload: the largest unit or the activations of "
                          "micro_batch_size 1 exceed a device; shorten train.seq_len or use devices with more memory";
    } else if (!closest.fits_host) {
        const double rpn = double(closest.ranks_per_node);
        advice.why_none = "the devices fit with offload (zero_stage " + std::to_string(closest.zero_stage) + ", offload " +
                          (closest.nvme_bytes > 0 ? "to NVMe" : "to host memory") + "), but a node's host memory does not: " +
                          gib(double(closest.host_bytes) * rpn) + " needed (" +
                          (closest.host_gradient_bytes > 0
                               ? "the gradient sums the devices cannot keep: " + gib(double(closest.host_gradient_bytes) * rpn)
                               : "the optimizer state: " + gib(double(closest.host_moment_bytes + closest.host_master_bytes) * rpn)) +
                          "), " + gib(double(closest.host_limit_bytes)) + " usable; " +
                          (closest.nvme_bytes > 0 || target.nvme_bytes <= 0 ? "" : "plan with runtime.offload_dir (NVMe), ") +
                          (closest.host_gradient_bytes > 0 && closest.gradient_sum_element_bytes == 4
                               ? "halve the sums with runtime.gradient_sum_dtype bf16, " : "") +
                          "more nodes, or raise target.host_memory_gib";
    } else {
        advice.why_none = "the devices fit with offload, but a node's NVMe does not: " +
                          gib(double(closest.nvme_bytes) * double(closest.ranks_per_node)) + " needed, " +
                          gib(double(closest.nvme_limit_bytes)) + " there; raise target.nvme_gib or use more nodes";
    }
    return advice;
}

InferenceCachePlan planInferenceCache(const ModelConfig& m, int64_t element_bytes) {
    InferenceCachePlan p;
    p.rows = m.max_batch_size;
    p.positions = m.max_seq_len;
    p.layers = m.n_layers;
    p.element_bytes = element_bytes;
    p.naive_bytes_per_token = m.n_layers * m.n_heads * (m.qkHeadDim() + m.v_head_dim) * element_bytes;
    p.absorbed_bytes_per_token = m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim) * element_bytes;
    // Saturating: the largest allowed rows x positions (2^44) of a wide model pass 2^63.
    p.naive_bytes = clampedProduct(p.naive_bytes_per_token, __int128(p.rows) * p.positions);
    p.absorbed_bytes = clampedProduct(p.absorbed_bytes_per_token, __int128(p.rows) * p.positions);
    return p;
}

std::string inferenceCachePlanToJson(const InferenceCachePlan& p) {
    return nlohmann::json{{"rows", p.rows},
                          {"positions", p.positions},
                          {"layers", p.layers},
                          {"element_bytes", p.element_bytes},
                          {"naive_bytes_per_token", p.naive_bytes_per_token},
                          {"absorbed_bytes_per_token", p.absorbed_bytes_per_token},
                          {"naive_bytes", p.naive_bytes},
                          {"absorbed_bytes", p.absorbed_bytes}}
        .dump();
}

std::string outOfMemoryAdvice(const RunConfig& config) {
    MemoryPlan one = planFor(config, 1, 0);
    std::ostringstream advice;
    const double mib = 1024.0 * 1024.0;
    advice.precision(1);
    advice << std::fixed << "the planner puts micro_batch_size 1 at " << double(one.peak_bytes) / mib
           << " MiB per rank (weights, gradients and AdamW state alone "
           << double(one.weight_bytes + one.gradient_bytes + one.bucket_bytes + one.optimizer_bytes) / mib
           << " MiB); shorten train.seq_len, use a smaller model, raise runtime.memory_limit_mb, or spread the "
              "ranks over more devices";
    return advice.str();
}

namespace {

std::string humanBytes(int64_t bytes) {
    std::ostringstream text;
    text.precision(1);
    const double gib = double(bytes) / (1024.0 * 1024.0 * 1024.0);
    if (gib >= 1.0) text << std::fixed << gib << " GiB";
    else text << std::fixed << double(bytes) / (1024.0 * 1024.0) << " MiB";
    return text.str();
}

}  // namespace

void requirePlanFits(const RunConfig& config, int64_t device_bytes) {
    const int64_t budget = config.runtime.memory_limit_mb * 1024 * 1024;
    const MemoryPlan smallest = planFor(config, 1, budget > 0 ? budget : device_bytes);
    const int64_t moments_here = smallest.placement.moments == Tier::Device ? smallest.optimizer_bytes : 0;
    const int64_t state = smallest.weight_bytes + smallest.gradient_bytes + smallest.bucket_bytes + moments_here;
    if (budget > 0) {
        // On CPU ranks the host tier is the budget's memory too (fits_device counts it): a run
        // checked against the peak alone started and failed out of memory in its first step.
        if (smallest.fits_device) return;
        const bool one_memory = deviceTypeOf(config.runtime) == DeviceType::Cpu && smallest.host_bytes > 0;
        const std::string host = one_memory ? ", and the offloaded state's " + humanBytes(smallest.host_bytes) +
                                                  " shares that memory on CPU ranks (runtime.offload_dir moves it to disk)"
                                            : std::string();
        throw ConfigError("runtime.memory_limit_mb",
                          "runtime.memory_limit_mb (" + std::to_string(config.runtime.memory_limit_mb) +
                              " MiB): the planner needs " + humanBytes(smallest.peak_bytes) +
                              " per rank even at micro_batch_size 1 (weights, gradients and AdamW state alone " +
                              humanBytes(state) + ")" + host + "; raise the budget, shorten train.seq_len or use a smaller model");
    }
    if (device_bytes <= 0) return;
    const MemoryPlan plan = planMemory(config, device_bytes);
    if (plan.fits) return;
    std::string fix;
    if (plan.largest_fitting_micro_batch > 0) {
        const int64_t m = plan.largest_fitting_micro_batch;
        const int64_t k = config.globalBatch() / (m * config.runtime.world_size);
        fix = "micro_batch_size " + std::to_string(m) + " fits: --set train.micro_batch_size=" + std::to_string(m) +
              " --set train.gradient_accumulation_steps=" + std::to_string(k) + " keeps the global batch";
    } else {
        fix = "even micro_batch_size 1 needs " + humanBytes(smallest.peak_bytes) + " (weights, gradients and AdamW state " +
              humanBytes(state) + "); use a smaller model, a shorter train.seq_len or devices with more memory";
    }
    throw ConfigError("train.micro_batch_size",
                      "train.micro_batch_size (" + std::to_string(config.train.micro_batch_size) +
                          "): the planner puts this config at " + humanBytes(plan.peak_bytes) +
                          " per rank, but the device has " + humanBytes(device_bytes) + " per rank; " + fix);
}

}  // namespace trainbench
