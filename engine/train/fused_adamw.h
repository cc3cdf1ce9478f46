// One AdamW step through ATen's fused kernel, on torch::optim::AdamW's own state.
#pragma once

#include <torch/torch.h>

namespace trainbench {

// The same update as torch::optim::AdamW::step() (decoupled weight decay, bias-corrected
// moments, no amsgrad), in one pass over each parameter where the unfused step makes about
// eight. The moments and step counts live in the optimizer's state, so checkpoints and
// resumes read and write them exactly as before. `grad_divisor` (gradient clipping) divides
// every gradient as the kernel reads it, which also stores it divided, as clipping in place
// would; the divisor travels as fp32.
void fusedAdamWStep(torch::optim::AdamW& optimizer, double grad_divisor = 1.0);

}  // namespace trainbench
