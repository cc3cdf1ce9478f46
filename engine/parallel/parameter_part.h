// ParameterPart: a set of the model's parameters whose gradients sum over one group of ranks,
// with the machinery of its stage: gradient buckets, at stages 1-3 the AdamW moments of this
// rank's slices, at stage 3 the weights' shards. Replicated and sharded layouts have one part
// (every parameter, over the world); expert parallelism two (the dense parameters over the
// world, the routed experts over their replicas).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "comm/collectives.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "parallel/gradient_buckets.h"
#include "parallel/sharded_adamw.h"
#include "parallel/sharded_weights.h"
#include "trainbench/placement.h"
#include "trainbench/run_config.h"

namespace trainbench {

struct PartSpec {
    std::vector<size_t> indices;  // into the model's parameters (model order)
    Collectives* group = nullptr;
    int rank_in_group = 0;
    // What is sharded and where it lives (the layout's, one rule for every part).
    Placement placement;
    // Buckets reduce while the window's last backward runs (GradientBuckets::beginOverlap).
    bool overlap = false;
    // train.sync_each_micro_batch: every micro-batch's gradients reduced into running sums.
    bool sync_each_micro_batch = false;
    // Stages 0 and 1: the buckets' sizes (GradientBuckets). Stages 2 and 3 bucket by the
    // model's units instead.
    int64_t bucket_bytes = 25 << 20;
    int64_t first_bucket_bytes = 1 << 20;
    // placement.moments in File: the scratch file of this part's moments on this rank.
    std::string moments_file;
    // placement.weights in File: the scratch file of this part's weight shards.
    std::string shard_file;
    // placement.gradient_sums in File: the scratch file of this part's gradient slice sums.
    std::string gradients_file;
    // runtime.offload: the account the moments (under all the weights' shards too) are counted
    // in; nullptr: the thread's.
    MemoryAccount* host_memory = nullptr;
    // runtime.optimizer_dtype: the storage of the AdamW moments.
    OptimizerDtype moments = OptimizerDtype::Fp32;
    // runtime.gradient_sum_dtype: the slice sums' dtype at stages 2 and 3.
    GradientSumDtype gradient_sums = GradientSumDtype::Fp32;
};

// Each entry of `state` named names[i] becomes replacements[i] where that is defined (the fp32
// master of a weight held in bf16 on the device, in place of its rounding).
void replaceNamed(NamedTensors& state, const std::vector<std::string>& names,
                  const std::vector<torch::Tensor>& replacements);

class ParameterPart {
public:
    // `resumed_optimizer`: the whole saved AdamW state; a sharded part takes its slices of it.
    ParameterPart(const PartSpec& spec, Transformer& model, const TrainConfig& train,
                  const NamedTensors* resumed_optimizer);
    ParameterPart(const ParameterPart&) = delete;
    ParameterPart& operator=(const ParameterPart&) = delete;

    const std::vector<size_t>& indices() const { return spec_.indices; }
    Collectives& group() const { return *spec_.group; }
    const GradientBuckets& buckets() const { return *buckets_; }
    GradientBuckets& buckets() { return *buckets_; }
    ShardedWeights* weights() const { return weights_.get(); }
    bool sharded() const { return optimizer_ != nullptr; }
    // The bytes this part's offload files have moved since the start (moments, shards and
    // gradient sums).
    int64_t offloadBytesRead() const {
        return (optimizer_ ? optimizer_->bytesRead() : 0) + (weights_ ? weights_->bytesRead() : 0) +
               buckets_->fileBytesRead();
    }
    // The host link's bytes since the start, each way (the host step's copies, shards going up).
    int64_t bytesToDevice() const {
        return (optimizer_ ? optimizer_->bytesToDevice() : 0) + (weights_ ? weights_->bytesUp() : 0);
    }
    int64_t bytesToHost() const { return (optimizer_ ? optimizer_->bytesToHost() : 0) + buckets_->bytesToHost(); }
    // Stage 3: the bytes of this rank's weight shards its gathers took since the start.
    int64_t shardBytesGathered() const { return weights_ ? weights_->bytesGathered() : 0; }
    int64_t offloadBytesWritten() const {
        return (optimizer_ ? optimizer_->bytesWritten() : 0) + (weights_ ? weights_->bytesWritten() : 0) +
               buckets_->fileBytesWritten();
    }

    // The window's hooks (see GradientLayout), for this part.
    void beginWindow();
    void beginMicroBatch(bool last);
    void endMicroBatch();
    void syncMicroBatch();
    void launchRemaining();
    void drop();
    void reduce();
    // The unit-major window (GradientLayout::holdUnit and the rest), for this part: stage 3's
    // unit held and released once per pass, and at stages 2-3 the unit's buckets
    // reduce-scattered after each micro-batch's backward of it. Nothing at stages 0-1, whose
    // gradients accumulate in place and are reduced once when the window ends.
    void holdUnit(int64_t unit, bool backward);
    void releaseUnit(int64_t unit);
    void beginUnitMicroBatch(int64_t unit, bool last);
    void endUnitMicroBatch();
    // Whether the coming backward may skip the experts no token reached: where its buckets
    // are reduced during it (stage 2 per micro-batch, or the overlapped last one).
    bool skipsIdleExperts(bool last) const;

    // Sharded: the squares of this rank's slices per group (fp64 [groups] on `device`), not
    // yet summed over the group. `group_of_param` is in model order.
    torch::Tensor sliceSquares(const std::vector<int>& group_of_param, int64_t groups, const torch::Device& device) const;
    // Sharded: the AdamW step of this rank's slices, then the weights gathered (stages 1-2).
    void stepSlices(double lr, double grad_divisor);
    // Collective over the group: the whole moments (sharded) or weights (stage 3) under the
    // parameter names (`names` in model order); the group's first rank gets them.
    NamedTensors gatherMoments(const std::vector<std::string>& names) const;
    // (bf16 device weights: their fp32 master, not the shards' rounding.)
    NamedTensors gatherWeights(const std::vector<std::string>& names);
    // Stage 3, collective: whole copies of this part's parameters put at their model positions.
    void wholeParametersInto(std::vector<torch::Tensor>& out);
    // With bf16 device weights, collective: the fp32 master of each weight held in bf16, whole,
    // put at its model position on the weight's device (the others left as they are), on every
    // rank or (`every_rank` false) on the group's first only.
    void masterWeightsInto(std::vector<torch::Tensor>& out, bool every_rank);

private:
    std::vector<std::string> namesOf(const std::vector<std::string>& names) const;

    PartSpec spec_;
    std::unique_ptr<GradientBuckets> buckets_;
    std::unique_ptr<ShardedWeights> weights_;  // stage 3
    std::unique_ptr<ShardedAdamW> optimizer_;  // stages 1-3
    std::vector<size_t> bf16_weights_;         // positions in spec_.indices held in bf16 on the device
    // Sharded gradients: each unit's buckets, [first, first + count) (count 0: none of this part's).
    std::vector<std::pair<size_t, size_t>> unit_buckets_;
    bool unit_open_ = false;  // beginUnitMicroBatch called, endUnitMicroBatch not yet
};

}  // namespace trainbench
