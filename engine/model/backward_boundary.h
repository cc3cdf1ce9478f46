// The point in the backward pass where a unit's backward is about to start.
#pragma once

#include <torch/torch.h>

#include "model/weight_residency.h"

namespace trainbench {

// Passes `outputs` (a unit's outputs: the block's hidden state, and its balance loss when it has
// one) through unchanged, and calls residency.beforeBackward(unit) in the backward once all of
// their gradients have arrived: autograd runs a node only when every gradient it takes is in,
// so no node of the unit has run yet, and every later unit has finished (its last node produced
// these gradients). Outside of training with gradients it returns the outputs as they are.
torch::autograd::variable_list backwardBoundary(const torch::autograd::variable_list& outputs,
                                                WeightResidency& residency, int64_t unit);

}  // namespace trainbench
