// SliceStore: where a rank's slices of each bucket (the AdamW moments; under offload all the
// weights' shard too) live between uses.
// Resident: tensors (on the rank's device, or with runtime.offload in host memory: on a GPU
// rank pinned slabs).
// Files: runtime.offload_dir, the NVMe tier: each bucket's slices in a scratch file, read into
// one of two aligned staging buffers while the bucket before it is in use, written back after.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "memory/memory_account.h"

namespace trainbench {

class SliceStore {
public:
    virtual ~SliceStore() = default;
    // Bucket b's `parts` slices (zeros until first written), to read and update in place until
    // release(b). One bucket is acquired at a time, plus the one prefetched.
    virtual std::vector<torch::Tensor> acquire(size_t bucket) = 0;
    // The same, for slices the caller will overwrite whole: nothing is read (the files' staging
    // slot holds whatever it held). Released with `modified` true.
    virtual std::vector<torch::Tensor> acquireToOverwrite(size_t bucket) { return acquire(bucket); }
    // Done with bucket b; `modified`: its slices changed and must be kept.
    virtual void release(size_t bucket, bool modified) = 0;
    // Bucket b comes next: its reads may start now.
    virtual void prefetch(size_t bucket) { (void)bucket; }
    // Every write complete (before a checkpoint reads the files' state, and at the step's end).
    virtual void flush() {}
    // What the store reads and writes, in bytes, since it was made (files only).
    virtual int64_t bytesRead() const { return 0; }
    virtual int64_t bytesWritten() const { return 0; }
};

// Where a store's slices of `slice_numels[b]` elements for every bucket b, one per entry of
// `parts` in that dtype (bf16 moments beside an fp32 master: each part's bytes its own), live: in
// `file` (the NVMe tier) when set; else, with `host_slabs`, in host memory carved from a few
// large slabs (PinnedSlabs: pinned when CUDA is there, so the copies to and from a GPU are
// asynchronous) for a rank whose device is not the host; else in tensors like `like`. The
// memory they take is counted in `account` (nullptr: the calling thread's).
struct SliceHome {
    std::string file;
    bool host_slabs = false;
    MemoryAccount* account = nullptr;
    std::string what;  // what the slices are, named when the slabs cannot be had
};
// The dtypes of one bucket's slices, one per part.
using SliceParts = std::vector<torch::ScalarType>;
std::unique_ptr<SliceStore> makeSliceStore(const SliceHome& home, const std::vector<int64_t>& slice_numels,
                                           const SliceParts& parts, const torch::TensorOptions& like);
// The same with each bucket's parts its own (`parts[b]`: stage 3's shards of the units' bf16
// weights beside those of their fp32 norms).
std::unique_ptr<SliceStore> makeSliceStore(const SliceHome& home, const std::vector<int64_t>& slice_numels,
                                           const std::vector<SliceParts>& parts, const torch::TensorOptions& like);
// The same with `parts` slices of like's dtype.
std::unique_ptr<SliceStore> makeSliceStore(const SliceHome& home, const std::vector<int64_t>& slice_numels, int parts,
                                           const torch::TensorOptions& like);
// A scratch file `path` (removed when the store goes) holding every bucket's slices, one per
// entry of `parts` in that dtype; the tensors acquire() gives are host tensors. Throws
// std::runtime_error naming the file when it cannot be made (see DirectFile).
std::unique_ptr<SliceStore> makeFileSliceStore(const std::string& path, const std::vector<int64_t>& slice_numels,
                                               const SliceParts& parts);
std::unique_ptr<SliceStore> makeFileSliceStore(const std::string& path, const std::vector<int64_t>& slice_numels,
                                               int parts, torch::ScalarType dtype);

}  // namespace trainbench
