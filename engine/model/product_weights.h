// Which of the model's parameters only ever enter matrix products (the linear layers' weights).
#pragma once

#include <vector>

#include "model/transformer.h"

namespace trainbench {

// Per parameter of model->parameters(), in that order: true for the weights of the linear
// layers (attention projections, MLPs, shared and routed experts, the output head). Under
// autocast these are exactly what it rounds to bf16 before use, so a bf16 copy of them on the
// device computes the same numbers; the embedding, the norms and the router stay fp32 (used
// elementwise, or kept fp32 on purpose).
std::vector<bool> productWeightMask(const Transformer& model);

}  // namespace trainbench
