// One AdamW step through ATen's fused kernel, on torch::optim::AdamW's own state; with the
// moments stored in bf16 (runtime.optimizer_dtype) through the bf16-moment kernel.
#pragma once

#include <torch/torch.h>

#include "trainbench/config_choices.h"

namespace trainbench {

// The dtype AdamW's moments are stored in for a parameter: the parameter's own (fp32, or fp64
// in the tests' fp64 runs) under runtime.optimizer_dtype fp32, bf16 under bf16.
torch::ScalarType momentDtype(OptimizerDtype moments, torch::ScalarType param);

// The same update as torch::optim::AdamW::step() (decoupled weight decay, bias-corrected
// moments, no amsgrad), in one pass over each parameter where the unfused step makes about
// eight. The moments and step counts live in the optimizer's state, so checkpoints and
// resumes read and write them exactly as before. `grad_divisor` (the trainer's 1/N
// normalisation times the clipping factor's inverse) divides every gradient as the kernel reads
// it, and the kernel stores it divided. The kernel takes the divisor as fp32: exact for a token
// count N below 2^24, within fp32 rounding (6e-8) above; fp64 parameters are divided in fp64
// first instead, so fp64 runs stay exact. Every tensor must be contiguous (the kernel walks
// raw memory): a logic_error says which is not. The moments a parameter's first step makes are
// of momentDtype(`moments`, its dtype); moments already there keep theirs.
void fusedAdamWStep(torch::optim::AdamW& optimizer, double grad_divisor = 1.0,
                    OptimizerDtype moments = OptimizerDtype::Fp32);

// The kernel itself over parallel lists (whole parameters, or slices of them as the sharded
// stages keep), with `grad_divisor` applied as above. The step tensors hold the counts after
// this step. The lists must be non-empty. Moments of the parameters' dtype go to ATen's fused
// kernel; bf16 moments of fp32 parameters on the CPU to kernels::adamWBf16Moments (one pass, fp32
// arithmetic, the new moments rounded to nearest even); bf16 moments elsewhere (a GPU's, or
// fp64 parameters) are widened a chunk at a time, stepped by ATen's kernel and rounded back
// the same way.
struct AdamWHyper {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, weight_decay = 0.0, eps = 1e-8;
};
void fusedAdamWUpdate(std::vector<torch::Tensor>& params, std::vector<torch::Tensor>& grads,
                      std::vector<torch::Tensor>& averages, std::vector<torch::Tensor>& squares,
                      std::vector<torch::Tensor>& steps, const AdamWHyper& hyper, double grad_divisor);

}  // namespace trainbench
