// WindowOrder: the order of one accumulation window's forwards and backwards (runtime.window_schedule).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/transformer.h"
#include "parallel/gradient_layout.h"
#include "train/fresh_gradient_norms.h"
#include "train/micro_batch_reader.h"
#include "train/run_control.h"
#include "trainbench/placement.h"
#include "trainbench/run_config.h"

namespace trainbench {

// What a schedule runs a window with: the rank's parts (the trainer's, borrowed).
struct WindowParts {
    Transformer& model;
    GradientLayout& layout;
    MicroBatchReader& reader;
    RunControl& control;
    FreshGradientNorms* fresh_norms = nullptr;  // null: no noise scale this window
    torch::Device device;
    ComputePrecision precision;
    // The unit order's boundary activations: kept on the device, in host memory between their
    // forward and their backward, or in `boundary_file` (offload_dir's scratch file).
    Tier boundaries = Tier::Device;
    std::string boundary_file;
};

// One window's work: its micro-batches and the trainer's hooks.
struct WindowWork {
    int64_t micro_batches = 0;                         // K
    std::function<MicroBatchPlace(int64_t k)> place;  // where micro-batch k lies
    // The next window's first micro-batch, read while this one computes; none after the last
    // (or where the next window's split is not known yet).
    std::optional<MicroBatchPlace> next_window;
    // Called at micro-batch k's boundary, after a stop was looked for (the trainer's fault
    // hooks: they may throw or wait).
    std::function<void(int64_t k)> at_boundary;
    // Sees (and may change) micro-batch k before its forward; empty: none.
    std::function<void(int64_t k, MicroBatch& batch)> edit;
    // model.n_mtp_depth D > 0: the depths' weights in every micro-batch's objective
    // (trainingObjective), made from this rank's counted targets of the whole window ([1 + D]
    // int64 on the host: the main loss's, then each depth's; mtpTargetCounts summed) and the
    // other ranks' (the trainer reduces them). Called once a window on every rank, before the
    // first backward: a depth's loss is a mean over the window's targets, which its weight in
    // the shared parameters' gradient sum must know. Empty without a module.
    std::function<torch::Tensor(const torch::Tensor& counts)> mtp_weights;
};

// What the window's micro-batches added up to on this rank, before any reduction.
struct WindowTotals {
    torch::Tensor loss_sum;  // fp64 scalar on the device: summed token losses
    torch::Tensor count;     // int64 scalar: counted targets
    torch::Tensor aux_sum;   // fp64 scalar: summed balance losses
    torch::Tensor mtp_sums;  // fp64 [D] on the device: each depth's summed token losses (D > 0)
    bool out_of_memory = false;  // a micro-batch ran out of memory (the window is to be dropped)
    bool stop_seen = false;      // a stop was seen where the rule says it is agreed at the window's end
    // The unit order's boundaries kept off a GPU (in host memory, or passing it to and from the
    // file): the bytes copied down when made and up for each use.
    int64_t boundary_bytes_down = 0, boundary_bytes_up = 0;
    // ... and in offload_dir's file: written once after their forward, read for each use.
    int64_t boundary_bytes_written = 0, boundary_bytes_read = 0;
};

class WindowOrder {
public:
    virtual ~WindowOrder() = default;
    // Runs the window's forwards and backwards: the gradients of every micro-batch accumulated
    // (or reduced as the layout does it), the losses in `totals` (zeros given). Returns false
    // when a stop seen at a boundary ends this rank's window alone (StopRule::EndsAlone); the
    // layout's closing calls are made either way, except then.
    virtual bool run(const WindowWork& work, WindowParts& parts, WindowTotals& totals) = 0;
};

// Every micro-batch of the window read (and edited) in order, the next window's first read ahead
// after the last: for an order that needs the whole window before its first backward.
std::vector<MicroBatch> readWindow(const WindowWork& work, MicroBatchReader& reader);

// The window's MTP weights (WindowWork::mtp_weights) from its micro-batches' targets; undefined
// without a module.
torch::Tensor windowMtpWeights(const WindowWork& work, const std::vector<MicroBatch>& window, int64_t depth);

// The order a run trains with: runtime.window_schedule as the placement resolved it
// (Placement::unit_order).
std::unique_ptr<WindowOrder> makeWindowOrder(const Placement& placement);

}  // namespace trainbench
