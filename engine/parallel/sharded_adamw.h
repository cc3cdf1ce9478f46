// ShardedAdamW: AdamW over this rank's slice of every gradient bucket (ZeRO stages 1 to 3).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/safetensors.h"
#include "comm/collectives.h"
#include "parallel/gradient_buckets.h"
#include "parallel/sharded_weights.h"
#include "memory/memory_account.h"
#include "offload/pinned_slabs.h"
#include "offload/side_copies.h"
#include "offload/slice_store.h"
#include "trainbench/config_choices.h"

namespace trainbench {

// Rank r of W owns elements [r * S, (r + 1) * S) of each bucket (S = the bucket's padded
// length / W). After the window's reduce-scatter its slice of the bucket holds the global
// gradient sums there; this optimizer keeps the AdamW moments of those elements only (8P/W
// bytes instead of 8P; 4P/W with runtime.optimizer_dtype bf16), steps them, and all-gathers the updated weights so every rank ends the
// step with the same full weights. The arithmetic is the fused AdamW kernel's, on views of the
// slices, with each element's weight decay that of the parameter it belongs to: the numbers
// are those of an unsharded AdamW, element by element.
class ShardedAdamW {
public:
    struct Options {
        double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.0;
        // runtime.offload_dir: the moments live in this scratch file (the NVMe tier), bucket
        // by bucket; empty: in tensors beside the gradient slices.
        std::string moments_file;
        // Offloaded to host memory: the account the moments are counted in (nullptr: the
        // allocating thread's, the rank's device account on CPU ranks).
        MemoryAccount* host_memory = nullptr;
        // The step on the host (runtime.offload on a GPU rank; a test hook on CPU ranks, where
        // the copies are plain copies): the moments, and an fp32 master of the rank's slices
        // (in the moments' store as their third part; under offload all the weights' shards
        // are the master), stay in host memory. The gradient slices reach the host once per step
        // (the accumulator stays on the device while it fits): at stages 2 and 3 each bucket's
        // finished sum is copied down as the window's last backward adds its last reduce-scatter
        // (GradientBuckets' SliceSums::CopiedDown), or the sums live on the host throughout
        // (SliceSums::OnHost); at stage 1 each bucket's reduced slice is copied down as its
        // reduce-scatter finishes (GradientBuckets::copySlicesDown); a slice not there (one
        // rank, or the sync-each mode) comes down into one of two pinned staging slices while
        // the bucket before it steps. The updated slice goes
        // back up on the same side stream, joined into the compute stream before the
        // all-gathers read it. The same kernel on the same elements: the numbers of the step on
        // the device, bitwise on CPU ranks.
        bool host_step = false;
        // runtime.optimizer_dtype: the moments' storage (bf16: in every home, files included, at
        // half the bytes; the host step's master stays in the gradients' dtype).
        OptimizerDtype moments = OptimizerDtype::Fp32;
        // Stage 3 under offload all with fp32 weights: the weights' shards, off the device, are
        // the master and are stepped where they are (ShardedWeights::shardsAreMaster).
        bool shards_are_master = false;
    };
    // `params` as given to `buckets`; `decays[i]`: parameter i takes weight decay.
    ShardedAdamW(const std::vector<torch::Tensor>& params, const std::vector<bool>& decays, GradientBuckets& buckets,
                 int rank, Options options);
    ~ShardedAdamW();  // waits for the copies in flight: their pinned slots go with it
    // Stage 3: the weights' shards, made after this optimizer (so that captureMaster could read
    // the fp32 weights before the shards rounded them). From then on the step updates the shards
    // in place and gathers nothing: each unit is all-gathered at its next use.
    void attachWeights(ShardedWeights* weights);

    // The sums of squares of the gradient sums in this rank's slices (fp64 [groups] on this
    // rank's device), element g over the parameters whose `group_of_param` is g: all-reduced
    // over the ranks and summed, the square of the global gradient norm.
    torch::Tensor sliceSquaredNorms(const std::vector<int>& group_of_param, int64_t groups) const;
    // One AdamW step of this rank's slices, the gradients divided by `grad_divisor` as they are
    // read (N, and the clipping factor), then the all-gather of the updated weights. Every
    // rank calls it (one all-gather per bucket).
    void step(double lr, double grad_divisor, Collectives& collectives);
    int64_t steps() const { return steps_; }
    // The NVMe tier's traffic of the moments since the start (0 with the moments in tensors).
    int64_t bytesRead() const { return moments_ ? moments_->bytesRead() : 0; }
    int64_t bytesWritten() const { return moments_ ? moments_->bytesWritten() : 0; }
    // The host step's copies since the start: gradient slices down, updated weights up.
    int64_t bytesToHost() const { return copies_ ? copies_->bytesToHost() : 0; }
    int64_t bytesToDevice() const { return copies_ ? copies_->bytesToDevice() : 0; }

    // The full moments under the parameter names (as adamWState writes them, in their storage
    // dtype), on the host,
    // gathered from every rank: one all-gather per bucket and moment, so every rank calls it;
    // rank 0 gets them, the others an empty list. Empty before the first step.
    NamedTensors gatherState(const std::vector<std::string>& names, Collectives& collectives) const;
    // Takes this rank's slices out of a saved full state (any world size or stage wrote it, with
    // either storage dtype: converted as restoreOptimizer does).
    void loadState(const std::vector<std::string>& names, const NamedTensors& saved);

    // host_step: fills the fp32 master of this rank's slices from the whole weights as they are
    // now (otherwise the first step does, from the device's weights), so that the device's
    // weights may then be rounded to bf16 without the master losing a bit: at stages 1 and 2
    // before they are rounded, at stage 3 before the shards are made. Again after loadState.
    void captureMaster();
    // host_step, collective (every rank calls it; one all-gather per bucket): the whole fp32
    // master of each parameter `wanted` (in the order of `params`), on the host, kept on every
    // rank or (`every_rank` false) on rank 0 only, the others getting undefined tensors; empty
    // before the master exists.
    std::vector<torch::Tensor> gatherMaster(Collectives& collectives, const std::vector<bool>& wanted, bool every_rank);

private:
    // A parameter's elements inside this rank's slice of its bucket.
    struct Segment {
        size_t param;
        int64_t param_offset;  // first element, in the flattened parameter
        int64_t slice_offset;  // the same element, in this rank's slice of the bucket
        int64_t numel;
        size_t bucket;
    };
    std::vector<torch::Tensor> params_;
    std::vector<bool> decays_;
    GradientBuckets& buckets_;
    int rank_;
    Options options_;
    ShardedWeights* weights_ = nullptr;  // stage 3 (attachWeights)
    std::vector<Segment> segments_;
    mutable torch::Tensor segment_groups_;  // sliceSquaredNorms: each segment's group, on the device
    // The gradient sums finished on the device (SliceSums::InFile, DownWhenFinished): each
    // segment's square, taken from its bucket's finished sum before the sum left the device (fp64,
    // [1] each, on the device).
    std::vector<torch::Tensor> segment_squares_;
    void noteFinishedSum(size_t bucket, const torch::Tensor& sum);
    // The gradients' dtype and device as the step reads them.
    torch::TensorOptions gradientOptions() const;
    std::unique_ptr<SliceStore> moments_;  // per bucket: [slice] x2 (host step: x3), this rank's; made at first step
    torch::ScalarType momentDtype() const;
    int64_t steps_ = 0;

    // host_step: the weights the kernel steps are a host master rather than the device's.
    std::unique_ptr<SideCopies> copies_;
    std::unique_ptr<PinnedSlabs> staging_slabs_;
    torch::Tensor staging_[2];  // the gradient slices' landing places, [widest slice] each
    std::unique_ptr<PinnedSlabs> rounded_slabs_;
    torch::Tensor rounded_[2];  // stage 3, bf16 shards on the device: the master rounded, going up
    bool master_ready_ = false;  // the master holds the device's weights (set by the first step)

    torch::Tensor gradientSlice(size_t bucket) const;
    SliceStore& moments();
    // host_step: the master is the third part of the moments' store (false: the weights'
    // shards, in host memory under offload all, are stepped in place).
    bool masterInStore() const;
    SideCopies& sideCopies();  // made at the first use
    // host_step: bucket b's gradient slice on the host, bucket b + 1's copy started (with the
    // buckets' slice sums on the host: the sum itself).
    torch::Tensor hostGradients(size_t bucket);
    // host_step: bucket b's master, filled from the device's weights at the first step.
    torch::Tensor hostMaster(size_t bucket, const std::vector<torch::Tensor>& moments, const torch::Tensor& shard);
    // host_step at stage 3 with the shard on the device in bf16: the master rounded on the host
    // (half the bytes cross PCIe) into a pinned slot, which then goes up on the side stream.
    void uploadRounded(size_t bucket, const torch::Tensor& shard, const torch::Tensor& master);
};

}  // namespace trainbench
