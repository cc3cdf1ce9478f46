// The sum of a tensor's squared elements in fp64, read in place on the CPU.
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

// Whether sumOfSquares reads x: the CPU kernels on (cpu_kernels.h), x on the CPU, dense, fp32
// or fp64.
bool sumOfSquaresTakes(const torch::Tensor& x);

// Each element widened to fp64 and squared, summed in fixed blocks (the same bits whatever the
// threads): one pass over memory, no dispatch, no tensor made.
double sumOfSquares(const torch::Tensor& x);

}  // namespace trainbench::kernels
