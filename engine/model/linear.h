// The bias-free linear layer y = x W^T (W stored [out, in]), the only kind the reference uses.
#pragma once

#include <torch/torch.h>

#include "kernels/linear.h"

namespace trainbench {

inline torch::nn::Linear plainLinear(int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// The layer applied through the projection kernel (one node on the CPU, at::linear elsewhere).
inline torch::Tensor project(const torch::nn::Linear& layer, const torch::Tensor& x) {
    return kernels::linear(x, layer->weight);
}

}  // namespace trainbench
