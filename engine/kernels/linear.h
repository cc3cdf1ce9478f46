// The bias-free projection y = x W^T (W [out, in]) as one autograd node on the CPU.
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

// x [..., in] -> [..., out]. Under ProductPrecision::kFp8: fp8Linear (fp32 CPU tensors) or
// fp8LinearCuda. Else, where cpuKernelsTake(x, W): one product forward, two backward
// (dL/dx = g W, dL/dW = g^T x, each only if wanted), saving x and W as at::linear does; else
// at::linear itself.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight);

}  // namespace trainbench::kernels
