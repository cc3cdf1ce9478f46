// GradientBuckets: flat fp32 buffers over the parameters' gradients, reduced one bucket a call.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <torch/torch.h>

#include "parallel/collectives.h"

namespace trainbench {

// Buckets hold parameters in reverse registration order (the order backward produces their
// gradients): a small first bucket, then buckets of about `bucket_bytes`. Gradients are kept
// in fp32 whatever the compute dtype, so accumulation is exact to fp32 (ACCUMULATION.md 10).
class GradientBuckets {
public:
    GradientBuckets(const std::vector<torch::Tensor>& params, int64_t bucket_bytes = 25 << 20,
                    int64_t first_bucket_bytes = 1 << 20);
    ~GradientBuckets();
    GradientBuckets(const GradientBuckets&) = delete;
    GradientBuckets& operator=(const GradientBuckets&) = delete;
    int64_t count() const { return static_cast<int64_t>(buckets_.size()); }

    // Overlapped reduction, in four calls per window. beginOverlap(), at the window's start:
    // this window's buckets will reduce through `collectives`, none started yet. armHooks(),
    // before the backward of the window's last micro-batch: from then on a hook on each
    // parameter copies its gradient into its bucket as soon as autograd has accumulated it, and
    // a bucket whose gradients are all in is all-reduced asynchronously while the backward goes
    // on with earlier layers (buckets start in index order on every rank, so ranks' calls pair
    // up). launchRemaining(), after the micro-batches: starts the buckets left (a parameter the
    // last micro-batch did not reach has its gradient from earlier micro-batches, or none), on
    // every rank, also one that left the window early (out of memory) and never armed.
    // finishOverlap(): waits and writes the global sums into .grad; with `keep` false (a window
    // every rank drops) it only waits.
    void beginOverlap(Collectives& collectives);
    void armHooks();
    void launchRemaining();
    void finishOverlap(bool keep = true);
    // Buckets the last armed backward started before it returned: the overlap achieved.
    int64_t launchedDuringBackward() const { return launched_during_backward_; }

    // Sums every rank's gradients: one all-reduce per bucket. Parameters no micro-batch touched
    // contribute zeros. Afterwards each parameter's .grad holds the global sum.
    void reduce(Collectives& collectives);
    // What reduce() leaves when there is one rank, without copies: untouched parameters get a
    // zero gradient, so weight decay and the moments treat them exactly as with more ranks.
    void completeLocally();
    // Sync-each-micro-batch mode: reduces the gradients of the micro-batch just finished into
    // the running fp32 sums and clears .grad; finish() writes the sums back into .grad.
    void reduceIntoSums(Collectives& collectives);
    void finishSums();
    // A window every rank drops (out of memory): its running sums go with it.
    void dropSums();

private:
    class ReadyHook;
    void onGradientReady(size_t param);
    void launch(size_t bucket);  // caller holds overlap_mutex_

    struct Bucket {
        std::vector<size_t> members;  // indices into params_
        std::vector<int64_t> offsets;
        int64_t numel = 0;
        torch::Tensor flat;           // [numel] fp32 (fp64 for an fp64 model)
        torch::Tensor sums;           // running sums for the sync-each mode
        int64_t waiting = 0;          // overlap: members whose gradient is not in yet
        std::shared_ptr<CollectiveWork> work;  // overlap: the bucket's all-reduce in flight
    };
    void pack(Bucket& bucket);
    void unpack(Bucket& bucket, const torch::Tensor& source);
    std::vector<torch::Tensor> params_;
    std::vector<Bucket> buckets_;
    std::vector<std::pair<size_t, size_t>> place_;  // per parameter: (bucket, member)

    std::mutex overlap_mutex_;  // hooks run on autograd's threads
    Collectives* overlap_ = nullptr;  // set while a window's buckets are started by hooks
    std::atomic<bool> hooks_armed_{false};
    size_t next_launch_ = 0;
    int64_t launched_during_backward_ = 0;
};

}  // namespace trainbench
