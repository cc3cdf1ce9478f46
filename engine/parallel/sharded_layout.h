// ShardedLayout: the ZeRO stages without expert parallelism. Stage 1 shards the AdamW moments
// (the window's sums reduce-scattered once, the updated weights all-gathered); stage 2 also the
// gradients (reduce-scattered every micro-batch during its backward); stage 3 also the weights
// (each unit all-gathered as the model uses it). Every rank holds 1/W of what is sharded.
#pragma once

#include "parallel/part_layout.h"

namespace trainbench {

class ShardedLayout : public PartLayout {
public:
    ShardedLayout(const LayoutSetup& setup, Transformer model, const NamedTensors* resumed_optimizer);

    StopRule stopRule() const override { return StopRule::AgreedAfterLeaving; }
    // Stage 3's weights are gathered unit by unit as the evaluation runs: every rank takes part.
    bool modelDivided() const override { return part().weights() != nullptr; }
    void beforeBackward(bool last) override { skipIdleExperts(last); }
    GroupSquares groupSquares(const std::vector<int>& group_of_param, int64_t groups) override {
        return {shardedSquares(group_of_param, groups), {}};
    }
    void step(double lr, double grad_divisor) override { part().stepSlices(lr, grad_divisor); }
    CheckpointTensors gatherCheckpoint() override;

private:
    ParameterPart& part() const { return *parts_.front(); }
};

}  // namespace trainbench
