// One AdamW step through ATen's fused kernel, on torch::optim::AdamW's own state.
#pragma once

#include <torch/torch.h>

namespace trainbench {

// The same update as torch::optim::AdamW::step() (decoupled weight decay, bias-corrected
// moments, no amsgrad), in one pass over each parameter where the unfused step makes about
// eight. The moments and step counts live in the optimizer's state, so checkpoints and
// resumes read and write them exactly as before. `grad_divisor` (the trainer's 1/N
// normalisation times the clipping factor's inverse) divides every gradient as the kernel reads
// it, and the kernel stores it divided. The kernel takes the divisor as fp32: exact for a token
// count N below 2^24, within fp32 rounding (6e-8) above; fp64 parameters are divided in fp64
// first instead, so fp64 runs stay exact. Every tensor must be contiguous (the kernel walks
// raw memory): a logic_error says which is not.
void fusedAdamWStep(torch::optim::AdamW& optimizer, double grad_divisor = 1.0);

}  // namespace trainbench
