// WindowOrder: the order of one accumulation window's forwards and backwards (runtime.window_schedule).
#pragma once

#include <functional>
#include <memory>
#include <optional>

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
    // The unit order's boundary activations: kept on the device, or in host memory between
    // their forward and their backward.
    Tier boundaries = Tier::Device;
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
};

// What the window's micro-batches added up to on this rank, before any reduction.
struct WindowTotals {
    torch::Tensor loss_sum;  // fp64 scalar on the device: summed token losses
    torch::Tensor count;     // int64 scalar: counted targets
    torch::Tensor aux_sum;   // fp64 scalar: summed balance losses
    bool out_of_memory = false;  // a micro-batch ran out of memory (the window is to be dropped)
    bool stop_seen = false;      // a stop was seen where the rule says it is agreed at the window's end
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

// The order a run trains with: runtime.window_schedule as the placement resolved it
// (Placement::unit_order).
std::unique_ptr<WindowOrder> makeWindowOrder(const Placement& placement);

}  // namespace trainbench
