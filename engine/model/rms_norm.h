// RMSNorm: x / sqrt(mean(x^2) + eps) * weight, computed in fp32.
#pragma once

#include <torch/torch.h>

namespace trainbench {

class RMSNormImpl : public torch::nn::Module {
public:
    explicit RMSNormImpl(int64_t dim, double eps = 1e-6);
    torch::Tensor forward(const torch::Tensor& x);  // [..., dim] -> [..., dim]

    torch::Tensor weight;  // [dim], initialised to ones

private:
    double eps_;
};
TORCH_MODULE(RMSNorm);

}  // namespace trainbench
