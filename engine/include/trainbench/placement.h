// Placement: where a rank's training state lives, decided once from the config. What ZeRO's
// stage shards over the ranks, and in which tier (the device, host memory, the offload
// directory's files) the AdamW moments, the fp32 master, the gradient sums and the weights live;
// whether the optimizer steps on the host; the dtype of the weights on the device. The layouts
// build their parts from it, the planner counts its bytes from it, the session and the GUI's
// wording read it: one rule, so the plan and the run cannot disagree about where a byte is.
// Torch-free.
#pragma once

#include "trainbench/device_type.h"
#include "trainbench/run_config.h"

namespace trainbench {

// What runtime.zero_stage shards over the ranks (each stage adds one kind of state). The stages
// as a table of what they shard, not as comparisons of their numbers.
struct Sharding {
    bool moments = false;    // stage 1 and up: each rank keeps and steps its slices' AdamW moments
    bool gradients = false;  // stage 2 and up: each rank keeps its slices' gradient sums
    bool weights = false;    // stage 3: each rank keeps its slices of the weights, units gathered when used
    bool operator==(const Sharding&) const = default;
};
Sharding shardingOf(int64_t zero_stage);

// Where a piece of state lives between uses.
enum class Tier {
    Device,  // the rank's device (on CPU ranks, the host's memory the device is)
    Host,    // host memory off the device
    File,    // runtime.offload_dir's scratch files
};
const char* tierName(Tier tier);

// What the config alone does not say.
struct PlacementQuery {
    DeviceType device = DeviceType::Cpu;
    // The CPU ranks' products run under autocast (the CPU kernels off) rather than the kernels.
    bool cpu_autocast = false;
    // Test hook: runtime.offload on CPU ranks takes the GPU ranks' path (a host step).
    bool host_step_on_cpu = false;
    // The model is held in fp64 (the reference runs of the tests): no rounding anywhere.
    bool fp64 = false;
    // The device cannot keep the gradient sums beside the rest (the planner's budget says so):
    // they go to host memory where the placement allows it (gradientSumsMayLeaveDevice).
    bool gradient_sums_off_device = false;
    // Nor can host memory (or, on CPU ranks, the one memory): under the unit order with the
    // optimizer's state in offload_dir they wait there (gradientSumsMayGoToFile).
    bool gradient_sums_in_file = false;
    // The unit order's boundary activations do not fit the device beside the rest (the
    // planner's answer): they go to host memory on a GPU rank; under window_schedule auto, where
    // they fit nowhere, the micro-batch order is kept.
    bool boundaries_off_device = false;
    // Nor can host memory (on CPU ranks, the one memory): with runtime.offload_dir set they wait
    // in a scratch file there, written once after their forward and read back for each use.
    bool boundaries_in_file = false;
    bool unit_order_fits_nowhere = false;
};

struct Placement {
    Sharding sharded;
    // runtime.offload on a rank whose device is not the host: the optimizer steps in host
    // memory, on an fp32 master there, and the weights come back up from it.
    bool host_step = false;
    Tier moments = Tier::Device;
    // The fp32 master: Device when the trained weights are it; otherwise the moments' tier (the
    // host step's copy, or under offload all the shards' home).
    Tier master = Tier::Device;
    Tier gradient_sums = Tier::Device;
    Tier weights = Tier::Device;  // the weights' shards between uses (offload all: off the device)
    // The linear layers' weights held in bf16 on the device beside the fp32 master: the host
    // step under bf16 autocast, whose products round them to bf16 at every use anyway, and under
    // fp8 on a GPU, whose fp8 products then quantise the bf16 weights (docs/design/fp8.md 8).
    bool bf16_device_weights = false;
    // runtime.window_schedule resolved: every micro-batch through one unit before the next
    // (train/unit_order.h); "auto" takes it where the weights are streamed (offload all) and
    // blocks are recomputed, and the boundary activations fit.
    bool unit_order = false;
    // The unit order's boundary activations (each block's input per micro-batch of the window):
    // on the device, in host memory (a GPU rank's), or in offload_dir's file.
    Tier boundaries = Tier::Device;

    // The gradient sums may live in host memory (when the budget says the device cannot keep
    // them): the host step reads them there, and only stages 2 and 3 keep them as slices.
    bool gradientSumsMayLeaveDevice() const { return host_step && sharded.gradients; }
    // The gradient sums may wait in offload_dir's file: the unit order finishes each unit's sums
    // before the next unit's start (one unit's on the device at a time, each written once a
    // window), the sums are slices (stages 2 and 3), and the optimizer's state is in files.
    bool gradientSumsMayGoToFile() const { return unit_order && sharded.gradients && moments == Tier::File; }
    bool weightsOffDevice() const { return weights != Tier::Device; }
    bool operator==(const Placement&) const = default;
};

// The placement of `config`'s state on a rank of `query.device`.
Placement placementFor(const RunConfig& config, const PlacementQuery& query);

}  // namespace trainbench

// Floor: parallel/ (engine/README.md)
