// The MoE router: scores, optional balancing bias, group-limited top-k selection, weights.
#pragma once

#include <torch/torch.h>

#include "trainbench/run_config.h"

namespace trainbench {

struct Routing {
    torch::Tensor weights;  // [N, k] routing weights (route_scale applied), dtype of the scores (fp32)
    torch::Tensor indices;  // [N, k] chosen experts, int64
    torch::Tensor scores;   // [N, E] original scores (softmax or sigmoid), without bias, fp32
    torch::Tensor seq_aux;  // [sequences] the sequence-wise balance loss, when asked for
};

class GateImpl : public torch::nn::Module {
public:
    explicit GateImpl(const ModelConfig& config);
    // x: [N, d], `sequences` of N / sequences tokens each, in order. With sequences > 0 also the
    // balance loss aux_alpha sum_e f_e P_e of each (f_e: E / (k T) times its tokens routed to e,
    // P_e: the mean over its tokens of the scores normalised to sum 1).
    Routing forward(const torch::Tensor& x, int64_t sequences = 0, double aux_alpha = 0.0);

    torch::Tensor weight;  // [E, d]
    // [E] fp32, or undefined. A buffer, not a parameter: it steers the choice of experts only
    // and is moved by the balancing rule, never by gradients.
    torch::Tensor bias;

private:
    int64_t topk_, groups_, limited_groups_;
    bool sigmoid_;
    double route_scale_;
};
TORCH_MODULE(Gate);

}  // namespace trainbench
