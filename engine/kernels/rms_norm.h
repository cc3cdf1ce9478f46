// RMSNorm y = x r w, r = (mean(x^2) + eps)^-1/2 per row, as one autograd node of two loops.
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

// Whether rmsNorm takes x [..., d] and weight [d] (cpuKernelsTake, and the shapes).
bool rmsNormTakes(const torch::Tensor& x, const torch::Tensor& weight);

// Rows whose last dimension is dense and whose leading dimensions collapse into one stride
// (a channel slice of a wider tensor) are read in place. Saves x and r ([R] values);
// dL/dw = sum over rows of g n and dL/dx = r (g w - n mean(g w n)), n = x r, summed over
// fixed blocks of rows in a fixed order: the same bits whatever the threads.
torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

}  // namespace trainbench::kernels
