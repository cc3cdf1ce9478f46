// MomentStore: where the AdamW moments of a rank's bucket slices live between optimizer steps.
// Resident: tensors (on the rank's device, or with runtime.offload optimizer in host memory).
// Files: runtime.offload_dir, the NVMe tier: each bucket's two moments in a scratch file, read
// into one of two aligned staging buffers while the bucket before it steps, written back after.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace trainbench {

class MomentStore {
public:
    virtual ~MomentStore() = default;
    // Bucket b's first and second moments (zeros before the first step), to read and update
    // in place until release(b). One bucket is acquired at a time, plus the one prefetched.
    virtual std::pair<torch::Tensor, torch::Tensor> acquire(size_t bucket) = 0;
    // Done with bucket b; `modified`: its moments changed and must be kept.
    virtual void release(size_t bucket, bool modified) = 0;
    // Bucket b comes next: its reads may start now.
    virtual void prefetch(size_t bucket) { (void)bucket; }
    // Every write complete (before a checkpoint reads the files' state, and at the step's end).
    virtual void flush() {}
    // What the store reads and writes, in bytes, since it was made (files only).
    virtual int64_t bytesRead() const { return 0; }
    virtual int64_t bytesWritten() const { return 0; }
};

// Tensors of `slice_numels[b]` elements each, with `options`.
std::unique_ptr<MomentStore> makeResidentMomentStore(const std::vector<int64_t>& slice_numels,
                                                     const torch::TensorOptions& options);
// A scratch file `path` (removed when the store goes) holding every bucket's moments of
// `dtype`; the tensors acquire() gives are host tensors. Throws std::runtime_error naming the
// file when it cannot be made (see DirectFile).
std::unique_ptr<MomentStore> makeFileMomentStore(const std::string& path, const std::vector<int64_t>& slice_numels,
                                                 torch::ScalarType dtype);

}  // namespace trainbench
