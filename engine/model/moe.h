// Mixture of experts: routed experts dispatched by expert, fused shared experts, load counts.
#pragma once

#include <torch/torch.h>

#include "model/gate.h"
#include "model/mlp.h"
#include "trainbench/run_config.h"

namespace trainbench {

struct MoEOutput {
    torch::Tensor y;         // [B, T, d]
    torch::Tensor seq_aux;   // [B] complementary sequence-wise balance loss per sequence (alpha applied),
                             // undefined when alpha == 0
};

class MoEImpl : public torch::nn::Module {
public:
    explicit MoEImpl(const ModelConfig& config);
    MoEOutput forward(const torch::Tensor& x);  // x: [B, T, d]

    // Tokens routed to each expert since the last take, int64 [E] on the layer's device.
    // Summed over micro-batches so the trainer can reduce the window's load across ranks.
    torch::Tensor takeLoad();
    // Aux-loss-free balancing: bias += gamma * sign(mean(load) - load), from global counts.
    void updateBias(const torch::Tensor& global_load, double gamma);
    bool hasBias() const { return gate->bias.defined(); }
    // Off while a recomputed forward repeats one already counted (runtime.activation_checkpointing):
    // every token is counted once.
    void countLoads(bool on) { count_loads_ = on; }
    // The parameters of the experts no token reached in the training forwards since the last
    // take: they get no gradient in the backward, so the gradient buckets need not wait for them.
    std::vector<torch::Tensor> takeIdleExpertParameters();
    int64_t experts() const { return n_experts_; }
    Gate gate{nullptr};

private:
    int64_t n_experts_, topk_;
    double aux_alpha_;
    torch::nn::ModuleList experts_{nullptr};
    MLP shared_experts{nullptr};
    torch::Tensor load_;  // [E] int64
    bool count_loads_ = true;
    std::vector<int64_t> idle_experts_;  // of the last training forward
};
TORCH_MODULE(MoE);

}  // namespace trainbench
