// The planner's step time (trainbench/step_time.h). FLOPs count the products: 2 per
// multiply-add of every weight a token touches (its activated experts only; the embedding is a
// lookup), the attention's scores and weighted sum over the causal half of the sequence on
// average, times 3 for the forward and the backward's two products, plus the forward once more
// for what recomputation runs again.
#include "trainbench/step_time.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "trainbench/param_count.h"

namespace trainbench {
namespace {

constexpr double kGB = 1e9;

double seconds(double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * kGB) : 0.0; }

void needs(StepTimePlan& t, const char* field) {
    if (std::find(t.unknown.begin(), t.unknown.end(), field) == t.unknown.end()) t.unknown.push_back(field);
}

// Forward FLOPs of one token: the weights it meets and its attention over the causal context.
struct ForwardFlops {
    double attention = 0;     // per block
    double feedforward = 0;   // per block, averaged over dense and MoE blocks
    double total = 0;         // every block, the final norm and the head
};

ForwardFlops forwardFlopsPerToken(const ModelConfig& c, int64_t seq_len) {
    const ParamCount counts = countParameters(c);
    ForwardFlops f;
    const double context = double(seq_len + 1) / 2.0;
    f.attention = 2.0 * double(counts.attention) +
                  2.0 * double(c.n_heads) * double(c.qkHeadDim() + c.v_head_dim) * context;
    const double weights = double(counts.activated - counts.embedding);
    const double blocks_attention = double(c.n_layers) * 2.0 * double(counts.attention);
    f.feedforward = (2.0 * weights - blocks_attention - 2.0 * double(counts.head)) / double(std::max<int64_t>(1, c.n_layers));
    f.total = 2.0 * weights + double(c.n_layers) * (f.attention - 2.0 * double(counts.attention));
    return f;
}

}  // namespace

int64_t cpuAdamWBytesPerParameter(int64_t device_weight_bytes, int64_t moment_bytes, int64_t gradient_bytes) {
    return gradient_bytes + 4 * moment_bytes + 8 + (device_weight_bytes == 4 ? 0 : device_weight_bytes);
}

StepTimePlan predictStepTime(const RunConfig& config, const MemoryPlan& plan, const TargetMachine& target) {
    StepTimePlan t;
    const ModelConfig& c = config.model;
    const ForwardFlops forward = forwardFlopsPerToken(c, plan.seq_len);
    double per_token = 3.0 * forward.total;
    const Recomputation recompute = recomputation(config.runtime);
    if (recompute == Recomputation::Full) per_token += double(c.n_layers) * (forward.attention + forward.feedforward);
    if (recompute == Recomputation::Feedforward) per_token += double(c.n_layers) * forward.feedforward;
    t.flops_per_micro_batch = per_token * double(plan.micro_batch_size) * double(plan.seq_len);
    if (target.compute_tflops > 0) t.compute_s = t.flops_per_micro_batch / (target.compute_tflops * 1e12 * target.mfu);
    else needs(t, "target.compute_tflops");

    const int64_t K = std::max<int64_t>(1, plan.gradient_accumulation_steps);
    if (plan.world_size > 1) {
        const bool across_nodes = target.nodes > 1;
        const double rate = across_nodes ? target.network_gbps : target.interconnect_gbps;
        if (rate > 0) t.collectives_s = seconds(double(plan.bytes_sent_per_step) / double(K), rate);
        else needs(t, across_nodes ? "target.network_gbps" : "target.interconnect_gbps");
    }

    // The rank's slice (the shard whose moments it keeps), and what crosses PCIe and the disks.
    const Placement& place = plan.placement;
    const bool offloaded = place.moments != Tier::Device;
    const bool weights_off = place.weightsOffDevice();
    const bool on_nvme = place.moments == Tier::File;
    const double slice = double(plan.slice_elements);  // each piece crosses in its own dtype
    const double rpn = double(plan.ranks_per_node);
    double tail_host_bytes = 0;  // the node's host memory traffic after the last backward
    const double we = double(plan.weight_element_bytes);
    // Each rank's bytes a micro-batch by where they go (none where the placement moves none): the
    // shard up PCIe before the forward's gather and the backward's, read from NVMe first when it
    // lives there; the slice down PCIe (fp32) to the sums kept on the host, and their addition
    // there (the sum read and written in its dtype, the slice read: 12 bytes an element, 8 with
    // bf16 sums).
    // Under the unit order (runtime.window_schedule unit) the shard crosses twice a window, not
    // twice a micro-batch: a micro-batch's share is 1/K of it. Its boundary activations kept in
    // host memory go down when made and up for each use, [m, T, d] fp32 each, per micro-batch:
    // every unit's input (L + 1) down, up for the next unit's forward and again for its backward,
    // the head's once (its forward and backward run together), unit 1's once more for the
    // multi-token-prediction modules: 2L + 1 (+ 1); the gradient handed down, from the head's
    // backward and each block's (L + 1 down), up for each block's and the embedding's (L + 1),
    // and the modules' gradient of the embeddings (1 each way). Kept in offload_dir's file they
    // are written once and read at each use, the same counts, and on a GPU cross PCIe on the way.
    const bool gpu_offload = offloaded && target.gpu;
    const double passes = place.unit_order ? 1.0 / double(K) : 1.0;
    const double shard_up = gpu_offload && weights_off ? 2.0 * slice * we * passes : 0.0;
    const double from_nvme = weights_off && on_nvme ? 2.0 * slice * we * passes : 0.0;
    const double boundary = double(plan.micro_batch_size) * double(plan.seq_len) * double(c.dim) * 4.0;
    const bool boundaries_off = place.unit_order && place.boundaries != Tier::Device;
    const int64_t modules = c.n_mtp_depth > 0 ? 1 : 0;
    const double boundaries_kept = boundaries_off ? double(2 * c.n_layers + 2 + modules) * boundary : 0.0;
    const double boundaries_used = boundaries_off ? double(3 * c.n_layers + 2 + 2 * modules) * boundary : 0.0;
    const bool boundaries_cross = boundaries_off && target.gpu;
    const bool boundaries_in_file = boundaries_off && place.boundaries == Tier::File;
    // Under the unit order the sums kept on the host come down once a window, each unit's when
    // finished (a micro-batch's share 1/K, in their dtype), and nothing is added there.
    const double gs = double(plan.gradient_sum_element_bytes);
    const bool sums_added_on_host = gpu_offload && plan.gradients_on_host && !place.unit_order;
    const double sums_down = !gpu_offload || !plan.gradients_on_host ? 0.0
                             : sums_added_on_host                    ? 4.0 * slice
                                                                     : gs * slice / double(K);
    const double slice_down = sums_down + (boundaries_cross ? boundaries_kept : 0.0);
    const double up = shard_up + (boundaries_cross ? boundaries_used : 0.0);
    const double host_adds = sums_added_on_host ? (4.0 + 2.0 * gs) * slice : 0.0;
    if (gpu_offload || boundaries_cross) {
        if (target.pcie_gbps > 0) {
            // Up and down at once: PCIe is full duplex, each direction at the link's rate.
            t.pcie_up_s = seconds(up, target.pcie_gbps);
            t.pcie_down_s = seconds(slice_down, target.pcie_gbps);
            t.pcie_s = std::max(t.pcie_up_s, t.pcie_down_s);
            if (!plan.gradients_on_host) t.gradients_down_s = seconds(gs * slice, target.pcie_gbps);
            // The fp32 master goes up at stages 1 and 2 (bf16 device weights are rounded there);
            // at stage 3 the shard in its own dtype (the host rounds bf16 ones).
            if (!weights_off) t.weights_up_s = seconds(slice * (place.sharded.weights ? we : 4.0), target.pcie_gbps);
        } else {
            needs(t, "target.pcie_gbps");
        }
    }
    const double read_nvme = from_nvme + (boundaries_in_file ? boundaries_used : 0.0);
    if (read_nvme > 0) {
        if (target.nvme_read_gbps > 0) t.nvme_read_s = seconds(rpn * read_nvme, target.nvme_read_gbps);
        else needs(t, "target.nvme_read_gbps");
    }
    // The gradient sums in offload_dir's file (the unit order): each unit's finished sums
    // written once a window, while the backward goes on; a micro-batch's share is 1/K. (And
    // the boundaries kept there, each written once.)
    const double to_nvme = (plan.gradients_in_file ? double(plan.nvme_gradient_bytes) / double(K) : 0.0) +
                           (boundaries_in_file ? boundaries_kept : 0.0);
    if (to_nvme > 0) {
        if (target.nvme_write_gbps > 0) t.nvme_write_s = seconds(rpn * to_nvme, target.nvme_write_gbps);
        else needs(t, "target.nvme_write_gbps");
    }
    // One budget for the node's host memory, its ranks' together: every byte PCIe moves is DMA
    // into or out of pinned host memory, NVMe's reads land in it, the additions (on a thread of
    // their own beside the backward) read and write it. (CPU ranks: the host is the device.)
    // (the sums going to NVMe leave from it too)
    const double host_bytes = gpu_offload || boundaries_cross ? rpn * (up + slice_down + read_nvme + to_nvme + host_adds) : 0.0;
    if (host_bytes > 0) {
        if (target.host_memory_gbps > 0) {
            t.host_adds_s = seconds(rpn * host_adds, target.host_memory_gbps);
            t.host_memory_s = seconds(host_bytes, target.host_memory_gbps);
        } else {
            needs(t, "target.host_memory_gbps");
        }
    }
    t.micro_batch_s =
        std::max({t.compute_s, t.collectives_s, t.pcie_s, t.nvme_read_s + t.nvme_write_s, t.host_memory_s});

    if (offloaded) {
        // (bf16 device weights are rounded on the device from the fp32 master at stages 1 and 2:
        // the CPU step writes no bf16 copy; at stage 3 it writes the bf16 shard)
        const int64_t moment_bytes = isChoice(config.runtime.optimizer_dtype, OptimizerDtype::Bf16) ? 2 : 4;
        const double touched =
            rpn * slice *
            double(cpuAdamWBytesPerParameter(place.sharded.weights ? int64_t(we) : 4, moment_bytes, int64_t(gs)));
        if (target.host_memory_gbps > 0) t.optimizer_s = seconds(touched, target.host_memory_gbps);
        else needs(t, "target.host_memory_gbps");
        // The kernel's own rate where it is known (probe measures it): the slower of the two.
        if (target.cpu_adamw_gparams > 0)
            t.optimizer_s = std::max(t.optimizer_s, rpn * slice / (target.cpu_adamw_gparams * 1e9));
        tail_host_bytes = touched;
    }
    if (on_nvme) {
        // moments and master read and written back (through host memory both ways); the
        // gradient sums in the file read only
        // (the boundaries in the file are the window's traffic, not the step's)
        const double state = double(plan.nvme_bytes - plan.nvme_boundary_bytes);
        const double read = rpn * state, written = rpn * (state - double(plan.nvme_gradient_bytes));
        tail_host_bytes += read + written;
        if (target.nvme_read_gbps > 0 && target.nvme_write_gbps > 0)
            t.nvme_step_s = seconds(read, target.nvme_read_gbps) + seconds(written, target.nvme_write_gbps);
        else
            needs(t, target.nvme_read_gbps > 0 ? "target.nvme_write_gbps" : "target.nvme_read_gbps");
    }
    // The gradient sums come down while the last backward runs at stages 2 and 3 (each unit's
    // as it is finished) and at stage 1 over several ranks whose reduction overlaps it (each
    // bucket's after its reduce-scatter); otherwise after the window's reduction, bucket b + 1's
    // while b steps.
    const bool down_in_backward =
        place.sharded.gradients || (place.sharded.moments && plan.world_size > 1 && config.runtime.overlap_reduction &&
                                    !config.train.sync_each_micro_batch);
    const double down_in_tail = down_in_backward ? 0.0 : t.gradients_down_s;
    // The tail's share of the host memory budget: the CPU step's bytes, NVMe's moves in and out,
    // and the gradients landing when they come down after the window (the updated weights go up
    // after the step, on their own).
    if (gpu_offload && target.host_memory_gbps > 0) {
        if (!down_in_backward && !plan.gradients_on_host) tail_host_bytes += rpn * gs * slice;
        t.tail_host_memory_s = seconds(tail_host_bytes, target.host_memory_gbps);
    }
    const double tail = std::max({t.optimizer_s, t.nvme_step_s, down_in_tail, t.tail_host_memory_s}) + t.weights_up_s;
    const double last_micro_batch =
        down_in_backward ? std::max(t.micro_batch_s, t.gradients_down_s) : t.micro_batch_s;
    t.step_s = double(K - 1) * t.micro_batch_s + last_micro_batch + tail;

    // The step's bytes, every rank: under offload all each gather's shard goes up (or is read
    // from NVMe) as stage 3's accounting counts it, the boundaries both ways each micro-batch, the
    // gradient slices down every micro-batch where the sums live on the host (else once), the
    // updated weights up once where the device keeps them; NVMe's state read and written back
    // in the tail, the gradient sums in a file written in the window and read in the tail.
    const double W = double(plan.world_size);
    const double gathered = double(plan.shard_gathered_bytes_per_step) / W;
    if (gpu_offload || boundaries_cross) {
        const double shard = gpu_offload && weights_off ? gathered : 0.0;
        const double weights_up = gpu_offload && !weights_off ? slice * (place.sharded.weights ? we : 4.0) : 0.0;
        const double sums = !gpu_offload ? 0.0 : sums_added_on_host ? double(K) * 4.0 * slice : gs * slice;
        const double crossing_up = boundaries_cross ? boundaries_used : 0.0;
        const double crossing_down = boundaries_cross ? boundaries_kept : 0.0;
        t.to_device_bytes = W * (shard + double(K) * crossing_up + weights_up);
        t.to_host_bytes = W * (sums + double(K) * crossing_down);
    }
    if (on_nvme) {
        const double state = double(plan.nvme_bytes - plan.nvme_boundary_bytes);
        const double file_up = boundaries_in_file ? double(K) * boundaries_used : 0.0;
        const double file_down = boundaries_in_file ? double(K) * boundaries_kept : 0.0;
        t.nvme_read_bytes = W * ((weights_off ? gathered : 0.0) + state + file_up);
        t.nvme_write_bytes = W * (state + file_down);
    }

    // The bound: the term that takes the largest share of the step.
    const std::pair<const char*, double> shares[] = {
        {"compute", double(K) * t.compute_s},
        {"collectives", double(K) * t.collectives_s},
        {"PCIe", double(K) * t.pcie_s + std::max(0.0, last_micro_batch - t.micro_batch_s) +
                     std::max(0.0, down_in_tail - std::max(t.optimizer_s, t.nvme_step_s)) + t.weights_up_s},
        {"NVMe", double(K) * (t.nvme_read_s + t.nvme_write_s) + t.nvme_step_s},
        {"CPU AdamW", t.optimizer_s},
        // (beyond the CPU step's own bytes, which are its share)
        {"host memory", double(K) * t.host_memory_s + std::max(0.0, t.tail_host_memory_s - t.optimizer_s)},
    };
    for (const auto& [name, share] : shares)
        if (share > t.bound_s) t.bound = name, t.bound_s = share;
    return t;
}

std::string describeStepTime(const StepTimePlan& t) {
    auto readable = [](double s) {
        char text[32];
        if (s >= 90.0) std::snprintf(text, sizeof text, "%.1f min", s / 60.0);
        else if (s >= 1.0) std::snprintf(text, sizeof text, "%.1f s", s);
        else std::snprintf(text, sizeof text, "%.0f ms", s * 1e3);
        return std::string(text);
    };
    std::string text;
    if (t.step_s > 0) {
        text = (t.unknown.empty() ? "predicted " : "at least ") + readable(t.step_s) + " per step";
        if (!t.bound.empty()) text += ", bound by " + t.bound + " (" + readable(t.bound_s) + ")";
    } else {
        text = "step time not predicted";
    }
    if (!t.unknown.empty()) {
        text += "; unknown: ";
        for (size_t i = 0; i < t.unknown.size(); ++i) text += (i ? ", " : "") + t.unknown[i];
        text += " (set them, or `trainbench-cli probe` measures this machine's)";
    }
    return text;
}

std::string stepTimePlanToJson(const StepTimePlan& t) {
    return nlohmann::json{{"flops_per_micro_batch", t.flops_per_micro_batch},
                          {"compute_s", t.compute_s},
                          {"collectives_s", t.collectives_s},
                          {"pcie_up_s", t.pcie_up_s},
                          {"pcie_down_s", t.pcie_down_s},
                          {"pcie_s", t.pcie_s},
                          {"nvme_read_s", t.nvme_read_s},
                          {"nvme_write_s", t.nvme_write_s},
                          {"host_adds_s", t.host_adds_s},
                          {"host_memory_s", t.host_memory_s},
                          {"tail_host_memory_s", t.tail_host_memory_s},
                          {"micro_batch_s", t.micro_batch_s},
                          {"gradients_down_s", t.gradients_down_s},
                          {"optimizer_s", t.optimizer_s},
                          {"nvme_step_s", t.nvme_step_s},
                          {"weights_up_s", t.weights_up_s},
                          {"step_s", t.step_s},
                          {"to_device_bytes", t.to_device_bytes},
                          {"to_host_bytes", t.to_host_bytes},
                          {"nvme_read_bytes", t.nvme_read_bytes},
                          {"nvme_write_bytes", t.nvme_write_bytes},
                          {"bound", t.bound},
                          {"bound_s", t.bound_s},
                          {"unknown", t.unknown}}
        .dump();
}

}  // namespace trainbench
