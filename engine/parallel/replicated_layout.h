// ReplicatedLayout: plain data parallelism (runtime.zero_stage 0, no expert parallelism). Every
// rank holds the whole weights, gradients and AdamW moments; the window's gradient sums are
// all-reduced once per bucket (overlapped with the last backward when allowed), or per
// micro-batch under train.sync_each_micro_batch.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "parallel/part_layout.h"

namespace trainbench {

class ReplicatedLayout : public PartLayout {
public:
    ReplicatedLayout(const LayoutSetup& setup, Transformer model, const NamedTensors* resumed_optimizer);

    StopRule stopRule() const override { return StopRule::EndsAlone; }
    bool modelDivided() const override { return false; }
    void beforeBackward(bool last) override { skipIdleExperts(last); }
    GroupSquares groupSquares(const std::vector<int>& group_of_param, int64_t groups) override;
    void step(double lr, double grad_divisor) override;
    CheckpointTensors gatherCheckpoint() override;

private:
    std::unique_ptr<torch::optim::AdamW> optimizer_;
    torch::Tensor group_index_;  // the noise-scale group of each parameter, on the rank's device
};

// What the replicated layouts share (also expert parallelism at stage 0, whose gradients are
// whole too): the squared norm of each parameter's gradient (fp64 [P], model order), their sums
// per noise-scale group (`group_index`: each parameter's group, on the device, made once), and
// the step of torch's AdamW at a rate, its moments stored as `moments` says
// (runtime.optimizer_dtype).
torch::Tensor squaredGradientNorms(Transformer& model);
torch::Tensor sumPerGroup(const torch::Tensor& per_param, torch::Tensor& group_index, const std::vector<int>& group_of_param,
                          int64_t groups);
void replicatedStep(torch::optim::AdamW& optimizer, double lr, double grad_divisor, OptimizerDtype moments);

}  // namespace trainbench
