// Mixture of experts: routed experts dispatched by expert, fused shared experts, load counts.
#pragma once

#include <utility>

#include <torch/torch.h>

#include "model/expert_parallel.h"
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
    // Expert parallelism: keeps only this rank's experts (the others are dropped, their names
    // gone from the parameters) and from then on exchanges the routed tokens with the expert
    // group in every forward (and, through autograd, every backward).
    void distribute(const ExpertParallel& ep);
    // The routed experts' parameters this rank holds.
    std::vector<torch::Tensor> routedExpertParameters() const;
    // Expert parallelism: the routed rows this rank's experts received in the training forwards
    // since the last take (its share of the exchange: the imbalance that makes ranks wait).
    int64_t takeReceived() { return std::exchange(received_, 0); }
    Gate gate{nullptr};

private:
    // The routed experts' outputs for `dispatched` [N*k, d], its rows sorted by expert with
    // `count` [E] rows each (host), in the same order.
    torch::Tensor runExperts(const torch::Tensor& dispatched, const int64_t* count);
    torch::Tensor runExpertsParallel(const torch::Tensor& dispatched, const torch::Tensor& counts, const int64_t* count);
    int64_t n_experts_, topk_;
    double aux_alpha_;
    // The routed experts, registered under their index ("experts.<e>.") as a list would be, so
    // that expert parallelism can drop the ones held elsewhere; null where dropped.
    std::shared_ptr<torch::nn::Module> experts_;
    std::vector<MLP> expert_;
    ExpertParallel ep_;
    MLP shared_experts{nullptr};
    torch::Tensor load_;  // [E] int64
    bool count_loads_ = true;
    std::vector<int64_t> idle_experts_;  // of the last training forward
    int64_t received_ = 0;
};
TORCH_MODULE(MoE);

}  // namespace trainbench
