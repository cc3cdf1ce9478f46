// ExpertParallelLayout: runtime.expert_parallel > 1 over any stage. Each rank holds E / EP of
// every MoE layer's routed experts; the dense parameters are a part over the whole world and
// the routed experts a part over their replica group (the W / EP ranks holding the same
// experts), each at the config's stage. The expert group (the EP ranks that exchange tokens)
// holds every expert between them: norms sum over it, and checkpoints gather the experts there.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "parallel/paired_residency.h"
#include "parallel/part_layout.h"

namespace trainbench {

class ExpertParallelLayout : public PartLayout {
public:
    // Hands this rank its experts (the model is whole until here).
    ExpertParallelLayout(const LayoutSetup& setup, Transformer model, const NamedTensors* resumed_optimizer);

    StopRule stopRule() const override { return StopRule::AgreedAtWindowEnd; }
    // A micro-batch whose experts' tokens other ranks are exchanging cannot be abandoned alone.
    bool recoversFromOutOfMemory() const override { return false; }
    // The experts are divided among the ranks: every rank evaluates (the same windows).
    bool modelDivided() const override { return true; }
    Collectives* expertGroup() const override { return setup_.expert_collectives; }
    std::vector<char> routedExpertMask() const override { return is_routed_; }
    // The routed experts' buckets reduce after the backward (their idle ones included).
    void beforeBackward(bool) override {}
    GroupSquares groupSquares(const std::vector<int>& group_of_param, int64_t groups) override;
    void step(double lr, double grad_divisor) override;
    CheckpointTensors gatherCheckpoint() override;
    int64_t expertBucketCount() const override { return experts().buckets().count(); }

private:
    ParameterPart& dense() const { return *parts_[0]; }
    ParameterPart& experts() const { return *parts_[1]; }
    // `local` (weights or moments of this rank) with every routed expert of the expert group,
    // gathered from its ranks under its own name; collective over the group.
    NamedTensors gatherExperts(const NamedTensors& local) const;

    std::unique_ptr<torch::optim::AdamW> optimizer_;  // stage 0: over every parameter this rank holds
    std::vector<char> is_routed_;                     // per parameter
    torch::Tensor routed_mask_;                       // the same as fp64 1 / 0 on the rank's device
    torch::Tensor group_index_;
    std::unique_ptr<PairedResidency> paired_residency_;  // stage 3: both parts' weights
};

}  // namespace trainbench
