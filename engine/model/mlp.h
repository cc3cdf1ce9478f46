// The gated MLP w2(silu(w1 x) * w3 x): dense layers, routed experts and fused shared experts.
#pragma once

#include <torch/torch.h>

namespace trainbench {

class MLPImpl : public torch::nn::Module {
public:
    MLPImpl(int64_t dim, int64_t hidden);
    torch::Tensor forward(const torch::Tensor& x);  // [..., d] -> [..., d]
    // The three weights ([hidden, d], [d, hidden], [hidden, d]), for the grouped experts.
    const torch::Tensor& gateWeight() const { return w1->weight; }
    const torch::Tensor& downWeight() const { return w2->weight; }
    const torch::Tensor& upWeight() const { return w3->weight; }

private:
    torch::nn::Linear w1{nullptr}, w2{nullptr}, w3{nullptr};
};
TORCH_MODULE(MLP);

}  // namespace trainbench
