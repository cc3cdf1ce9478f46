// UnitOrder: every micro-batch of a window through one unit of the model, then the next unit.
#pragma once

#include "train/window_order.h"

namespace trainbench {

class BoundaryFile;

// runtime.window_schedule unit (docs/design/offload.md, "The window as the schedule"). The
// forward takes unit u = 0..L (the embedding, then each block) over all K micro-batches while
// u's weights are held, keeping each block's input per micro-batch (the boundary activations:
// K x (L + 1) of [m, T, d], and the blocks' balance losses); the head then runs each micro-batch's
// forward and backward; the backward takes the blocks L..1 and the embedding, each over all K
// micro-batches, recomputing the block from its kept input (activation_checkpointing full) and
// handing each micro-batch's input gradient to the unit below. The inputs and the gradients
// handed down wait on the device, in host memory or in offload_dir's file
// (Placement::boundaries, WindowParts::boundaries). Under ZeRO 3 each unit's
// weights are gathered twice a window rather than twice per micro-batch (with offload all:
// read from host memory or offload_dir twice, not 2K times).
//
// The numbers are micro_batch's bit for bit: every micro-batch's every operator sees the same
// inputs as under the micro-batch order with full recomputation (the same forward without a
// graph, the same recomputation, the head's loss made by the same operators), each parameter's
// gradient accumulates its micro-batches' contributions in the order k = 0..K-1, and at stages 2-3
// each unit's micro-batch is reduce-scattered and added into the sums in that order too
// (GradientBuckets::beginRange). The noise scale's per-micro-batch squares go to a row per
// micro-batch in the same per-row order (FreshGradientNorms::selectRow).
//
// A stop is looked for once, at the window's start (a rank then finishes the window, which
// every rank drops, where the layout agrees its stops); an out-of-memory error is not
// recovered (the layout's reductions of earlier units are already under way): the run fails
// with the advice, as an unrecoverable layout does.
class UnitOrder : public WindowOrder {
public:
    UnitOrder();
    ~UnitOrder() override;
    bool run(const WindowWork& work, WindowParts& parts, WindowTotals& totals) override;

private:
    // Placement::boundaries File: the scratch file, kept from window to window (made again when
    // a window needs more slots or larger ones).
    BoundaryFile* boundaryFile(const WindowParts& parts, int64_t slots, const std::vector<torch::Tensor>& tokens);
    std::unique_ptr<BoundaryFile> file_;
};

}  // namespace trainbench
