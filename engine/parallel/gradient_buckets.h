// GradientBuckets: flat fp32 buffers over the parameters' gradients, reduced one bucket a call.
#pragma once

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
    int64_t count() const { return static_cast<int64_t>(buckets_.size()); }

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

private:
    struct Bucket {
        std::vector<size_t> members;  // indices into params_
        std::vector<int64_t> offsets;
        int64_t numel = 0;
        torch::Tensor flat;           // [numel] fp32 (fp64 for an fp64 model)
        torch::Tensor sums;           // running sums for the sync-each mode
    };
    void pack(Bucket& bucket);
    void unpack(Bucket& bucket, const torch::Tensor& source);
    std::vector<torch::Tensor> params_;
    std::vector<Bucket> buckets_;
};

}  // namespace trainbench
