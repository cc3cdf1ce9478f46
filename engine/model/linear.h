// The bias-free linear layer y = x W^T (W stored [out, in]), the only kind the reference uses.
#pragma once

#include <torch/torch.h>

#include "kernels/linear.h"
#include "kernels/product_precision.h"

namespace trainbench {

inline torch::nn::Linear plainLinear(int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// The layer applied through the projection kernel (one node on the CPU, at::linear elsewhere;
// under runtime.dtype fp8 the recipe's block-scaled E4M3 products).
inline torch::Tensor project(const torch::nn::Linear& layer, const torch::Tensor& x) {
    return kernels::linear(x, layer->weight);
}

// A projection the fp8 recipe keeps in higher precision (the output head): under fp8 it runs at
// its operands' precision (fp32 on the CPU; bf16 under CUDA's autocast), else as project().
inline torch::Tensor projectOutsideFp8(const torch::nn::Linear& layer, const torch::Tensor& x) {
    if (kernels::productPrecision() != kernels::ProductPrecision::kFp8) return project(layer, x);
    const kernels::ProductPrecisionScope operands(kernels::ProductPrecision::kOperands);
    return kernels::linear(x, layer->weight);
}

}  // namespace trainbench
