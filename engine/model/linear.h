// The bias-free linear layer y = x W^T (W stored [out, in]), the only kind the reference uses.
#pragma once

#include <torch/torch.h>

namespace trainbench {

inline torch::nn::Linear plainLinear(int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

}  // namespace trainbench
