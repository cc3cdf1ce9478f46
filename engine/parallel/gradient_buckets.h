// GradientBuckets: flat fp32 buffers that hold the parameters' gradients, reduced one bucket a call.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <torch/torch.h>

#include "comm/collectives.h"
#include "memory/memory_account.h"
#include "offload/host_slice_sums.h"
#include "offload/slice_store.h"

namespace trainbench {

// How a bucket is reduced: every rank gets the whole sum (stage 0), or only its slice of it
// (the sharded stages: rank r owns [r * S, (r + 1) * S) of each bucket, S = padded / W).
enum class BucketReduction { AllReduce, ReduceScatter };

// Buckets hold parameters in reverse registration order (the order backward produces their
// gradients): a small first bucket, then buckets of about `bucket_bytes`. Each bucket is one
// flat buffer, padded with zeros to a multiple of `shards` elements, and every parameter's
// .grad is a view into it, so autograd accumulates straight into the buffer that is reduced
// (no second copy of the gradients, and no copies in or out). Gradients are kept in fp32
// whatever the compute dtype (fp64 for an fp64 model), so accumulation is exact to fp32
// (docs/design/accumulation.md section 10). Nothing may replace a parameter's .grad: zero() clears them.
//
// Transient buckets (ZeRO stage 2; stage 3 sends them out itself, see beginMicroBatch): no
// gradient is kept whole across micro-batches. Each micro-batch's gradients land in .grad as
// autograd makes them; a hook moves each into its bucket (allocated at the bucket's first
// gradient) and frees it; a full bucket is reduce-scattered at once, and when that is done this
// rank's slice of the sum is added into the bucket's slice sum [S] and the bucket is freed: the
// whole gradients of at most about two buckets exist at a time, plus 4P/W bytes of sums. K
// reduce-scatters per bucket and window. So these buckets are the model's units (the second
// constructor), whose size does not grow with the depth: buckets of a fixed size would hold a
// model smaller than one of them whole, more than stage 1 holds.
//
// Where the slice sums of transient buckets live, and how the optimizer's host step (runtime.offload
// on a GPU rank) gets them (HostSliceSums):
// - OnDevice: on the device, read there.
// - CopiedDown: on the device, and in the window's last micro-batch each bucket's finished sum
//   is copied to the host as soon as its last reduce-scatter is added, while the backward goes on
//   with earlier units (landedSlice); 4P/W bytes of host memory for the copies. Stage 1's
//   persistent buckets take it too (copySlicesDown): the reduced slice, after the window's one
//   reduce-scatter.
// - OnHost: in host memory only (when the device cannot keep them): each bucket's reduced slice
//   comes down as soon as its reduce-scatter is done, every micro-batch, and is added there.
// - InFile: in runtime.offload_dir's scratch file (the gradient tier on NVMe), for the unit-major
//   window, where a unit's K micro-batches run one after another: a bucket's sum is made on the
//   device (allocated at its first micro-batch) with the same additions as OnDevice, and when its
//   last micro-batch is added it is handed to the finished-sum hook (the clipping norm's squares)
//   and written to the file, and freed: the device holds one unit's sums at a time. The step
//   reads them back bucket by bucket (acquireSum), the next one's read started.
// - DownWhenFinished: in host memory, for the unit-major window (the host tier there): a bucket's
//   sum is made on the device as with InFile, and when its last micro-batch is added it is handed
//   to the finished-sum hook and copied down once into its host sum, and freed: one copy a window
//   where OnHost brings a slice down every micro-batch and adds it on the host; the device holds
//   one unit's sums at a time. The same additions in the same order: the same sums.
enum class SliceSums { OnDevice, CopiedDown, OnHost, InFile, DownWhenFinished };

// Where transient buckets keep their slice sums, and in what dtype.
struct SliceSumOptions {
    SliceSums where = SliceSums::OnDevice;
    MemoryAccount* host_account = nullptr;  // the host memory they (or InFile's staging) are counted in
    std::string file;                       // InFile: the scratch file
    // runtime.gradient_sum_dtype: the dtype the sums are kept and added in (Undefined: the
    // gradients' own, fp32 or fp64). Each micro-batch's reduced slice stays in the gradients'
    // dtype and is added into the sum there, the result rounded to it: with bf16 sums K roundings
    // a window, the same on the device, on the host and before the file.
    torch::ScalarType dtype = torch::ScalarType::Undefined;
};

class GradientBuckets {
public:
    GradientBuckets(const std::vector<torch::Tensor>& params, int64_t bucket_bytes = 25 << 20,
                    int64_t first_bucket_bytes = 1 << 20, int64_t shards = 1, bool transient = false);
    // Buckets given explicitly, in the order of `groups` (each a list of indices into `params`,
    // every parameter in exactly one): ZeRO stages 2 and 3 bucket by the model's units, backward first.
    // Transient buckets keep their slice sums where and as `sums` says.
    GradientBuckets(const std::vector<torch::Tensor>& params, const std::vector<std::vector<size_t>>& groups,
                    int64_t shards, bool transient, const SliceSumOptions& sums = {});
    ~GradientBuckets();
    GradientBuckets(const GradientBuckets&) = delete;
    GradientBuckets& operator=(const GradientBuckets&) = delete;
    int64_t count() const { return static_cast<int64_t>(buckets_.size()); }

    // Every gradient to zero (the window's start; a parameter no micro-batch reaches keeps
    // a zero gradient, so weight decay and the moments treat it alike on every rank). Transient
    // buckets: the slice sums to zero, every bucket and .grad freed.
    void zero();

    // Transient buckets, around each micro-batch's backward: beginMicroBatch() arms the hooks
    // that move gradients into buckets and reduce-scatter each full one; endMicroBatch()
    // reduces the buckets left (zeros for parameters this backward did not reach), waits, adds
    // this rank's slices into the sums and frees the buckets. Every rank makes the same calls:
    // a rank that left the window early still runs begin/end once per micro-batch it skipped.
    // With `hooks` false the gradients stay in .grad until the caller sends buckets out with
    // launchThrough (stage 3, at each unit's backward boundary) or endMicroBatch.
    // `last`: the window's last micro-batch (SliceSums::CopiedDown copies the finished sums down).
    void beginMicroBatch(Collectives& collectives, bool hooks = true, bool last = false);
    void endMicroBatch();
    // Transient buckets without hooks: takes the gradients of every bucket up to and including
    // `bucket` not sent yet, and starts their reduce-scatters in order (each followed by the
    // wait for the one before and its release).
    void launchThrough(size_t bucket);
    // Transient buckets: allocates bucket b (zeros) and makes each member's missing .grad a view
    // of it, so the coming backward accumulates there in place (no copy when it is sent).
    void viewGradientsInto(size_t bucket);
    // Transient buckets in the unit-major window (runtime.window_schedule unit): one unit's
    // buckets [first, first + count) around one micro-batch's backward of that unit.
    // beginRange() allocates them and makes their members' .grad views of them (as
    // viewGradientsInto); endMicroBatch() then reduce-scatters them in order, waits, adds this
    // rank's slices into the sums and frees them, the range's buckets only. Every bucket thus
    // gets each micro-batch's reduce-scatter in the window's micro-batch order, as under
    // beginMicroBatch/endMicroBatch: the same sums, bit for bit. `last`: the window's last
    // micro-batch of this unit (SliceSums::CopiedDown copies the finished sums down).
    void beginRange(Collectives& collectives, size_t first, size_t count, bool last);
    // Parameters that will get no gradient in the coming backward (experts no token reached):
    // while hooks are armed their buckets stop waiting for them, so later buckets can start.
    void noGradientComing(const std::vector<torch::Tensor>& params);
    bool transient() const { return transient_; }
    // Buckets that persist (stage 1) under the host step: from now on each bucket's slice is
    // copied to host memory (counted in `host_account`) on a side stream as soon as its
    // reduce-scatter is done, the copy ordered after it on the device (during the window's last
    // backward when the reduction overlaps it), and landedSlice() finds it there.
    void copySlicesDown(MemoryAccount* host_account);

    // Overlapped reduction, in four calls per window. beginOverlap(), at the window's start:
    // this window's buckets will reduce through `collectives`, none started yet. armHooks(),
    // before the backward of the window's last micro-batch: from then on a hook on each
    // parameter notes when autograd has accumulated its gradient, and a bucket whose gradients
    // are all in is reduced asynchronously while the backward goes on with earlier layers
    // (buckets start in index order on every rank, so ranks' calls pair up).
    // launchRemaining(), after the micro-batches: starts the buckets left (a parameter the last
    // micro-batch did not reach has its gradient from earlier micro-batches, or zeros), on every
    // rank, also one that left the window early and never armed. finishOverlap(): waits; the
    // buckets then hold the global sums (all of them, or this rank's slices). With `keep` false
    // (a window every rank drops) the gradients are zeroed after the wait.
    void beginOverlap(Collectives& collectives, BucketReduction how = BucketReduction::AllReduce);
    void armHooks();
    void launchRemaining();
    void finishOverlap(bool keep = true);
    // Buckets the last armed backward started before it returned: the overlap achieved.
    int64_t launchedDuringBackward() const { return launched_during_backward_; }

    // The overlap's calls without hooks: every bucket reduced after the backward.
    void reduce(Collectives& collectives, BucketReduction how = BucketReduction::AllReduce);
    // Sync-each-micro-batch mode: all-reduces the micro-batch just finished into running fp32
    // sums and zeroes the gradients; finishSums() writes the sums back into them.
    void reduceIntoSums(Collectives& collectives);
    void finishSums();
    // A window every rank drops (out of memory, a stop): its running sums go with it.
    void dropSums();

    // The layout, for the sharded optimizer: bucket b's flat buffer [padded], and where each
    // of its parameters lies in it.
    struct Member {
        size_t param;    // index into the parameters given to the constructor
        int64_t offset;  // of its first element in the bucket
        int64_t numel;
    };
    const torch::Tensor& flat(size_t bucket) const { return buckets_[bucket].flat; }
    const std::vector<Member>& members(size_t bucket) const { return buckets_[bucket].members; }
    int64_t shards() const { return shards_; }
    int64_t paddedNumel(size_t bucket) const { return buckets_[bucket].padded; }
    // Elements of each rank's slice of bucket b.
    int64_t sliceNumel(size_t bucket) const { return buckets_[bucket].padded / shards_; }
    // Every bucket's sliceNumel, in order.
    std::vector<int64_t> sliceNumels() const {
        std::vector<int64_t> out;
        for (size_t b = 0; b < buckets_.size(); ++b) out.push_back(sliceNumel(b));
        return out;
    }
    // Rank `rank`'s slice of bucket b's gradient sums: a view of the flat buffer, or (transient)
    // the slice sum, on the host with SliceSums::OnHost and DownWhenFinished (its additions or
    // copy done first).
    torch::Tensor slice(size_t bucket, int rank) const;
    bool sliceSumsOnHost() const { return sums_where_ == SliceSums::OnHost || sums_where_ == SliceSums::DownWhenFinished; }
    // InFile and DownWhenFinished: each bucket's sum is finished on the device, then leaves it
    // (the finished-sum hook sees it there).
    bool sumsFinishedOnDevice() const { return sums_where_ == SliceSums::InFile || sums_where_ == SliceSums::DownWhenFinished; }
    // SliceSums::InFile: bucket b's finished sum read from the file (a host tensor, valid until
    // releaseSum(b)), and the next bucket's read started by prefetchSum. One bucket at a time,
    // plus the one prefetched.
    bool sliceSumsInFile() const { return sums_where_ == SliceSums::InFile; }
    torch::Tensor acquireSum(size_t bucket) { return file_sums_->acquire(bucket).front(); }
    void prefetchSum(size_t bucket) { file_sums_->prefetch(bucket); }
    void releaseSum(size_t bucket) { file_sums_->release(bucket, false); }
    // sumsFinishedOnDevice(): called with each bucket's finished sum (on the device) before it
    // goes to the file or the host, on the thread that retires it; the sum is not changed after.
    void onSumFinished(std::function<void(size_t bucket, const torch::Tensor& sum)> hook) { sum_finished_ = std::move(hook); }
    // The sums file's traffic since it was made (0 without one).
    int64_t fileBytesRead() const { return file_sums_ ? file_sums_->bytesRead() : 0; }
    int64_t fileBytesWritten() const { return file_sums_ ? file_sums_->bytesWritten() : 0; }
    // The bytes of slices and sums that came down to host memory since it was made (the host
    // step's sums on the host or their copies; the sums in a file from a GPU).
    int64_t bytesToHost() const { return (host_sums_ ? host_sums_->bytesToHost() : 0) + file_bytes_down_; }
    // The gradients' dtype and device (the flat buffers').
    const torch::TensorOptions& gradientOptions() const { return options_; }
    // The slice sums' dtype (runtime.gradient_sum_dtype; the gradients' by default).
    torch::ScalarType sumDtype() const { return sum_options_.dtype().toScalarType(); }
    // SliceSums::CopiedDown: bucket b's sums on the host when the last micro-batch copied them
    // down and nothing changed them since (waited for); undefined otherwise (a rank that left
    // the window early: its last micro-batches were filler calls), and the caller copies.
    torch::Tensor landedSlice(size_t bucket) const;
    // A whole-bucket buffer for the weights' all-gather: the flat buffer itself, or (transient)
    // a fresh one.
    torch::Tensor gatherBuffer(size_t bucket) const;

private:
    class ReadyHook;
    struct Bucket;
    struct Layout {};  // the public constructors' common part, before any bucket is added
    GradientBuckets(const std::vector<torch::Tensor>& params, int64_t shards, bool transient, SliceSums sums,
                    torch::ScalarType sum_dtype, Layout);
    void addBucket(const std::vector<size_t>& params);  // members in the order given
    void takeGradients(Bucket& b);  // .grad into the (transient) bucket, then freed; caller holds overlap_mutex_
    void onGradientReady(size_t param);
    void launch(size_t bucket);  // caller holds overlap_mutex_
    void launchReady();          // the complete buckets, in index order; caller holds overlap_mutex_

    struct Bucket {
        std::vector<Member> members;
        int64_t padded = 0;    // numel padded to a multiple of shards_
        torch::Tensor flat;    // [padded]; .grad of each member views it (transient: while reduced)
        torch::Tensor slice_sum;  // transient on the device: [padded / shards_], this rank's slice summed over micro-batches
        torch::Tensor sums;    // running sums for the sync-each mode
        int64_t waiting = 0;   // overlap: members whose gradient is not in yet
        std::shared_ptr<CollectiveWork> work;  // overlap: the bucket's reduction in flight
    };
    std::vector<torch::Tensor> params_;
    std::vector<Bucket> buckets_;
    std::vector<size_t> bucket_of_;  // per parameter
    std::vector<size_t> member_of_;  // per parameter: its index in its bucket's members
    std::vector<char> arrived_;      // per parameter: counted out of its bucket's waiting this backward
    std::unordered_map<const void*, size_t> index_of_;  // TensorImpl of a parameter -> its index
    int64_t shards_ = 1;
    bool transient_ = false;
    SliceSums sums_where_ = SliceSums::OnDevice;
    std::unique_ptr<HostSliceSums> host_sums_;  // SliceSums::OnHost, CopiedDown and DownWhenFinished
    std::vector<char> landed_;                  // CopiedDown: per bucket, its host copy is current
    std::unique_ptr<SliceStore> file_sums_;     // InFile
    std::function<void(size_t, const torch::Tensor&)> sum_finished_;  // sumsFinishedOnDevice()
    int64_t file_bytes_down_ = 0;  // InFile on a GPU: the finished sums copied down to be written
    bool last_micro_batch_ = false;
    torch::TensorOptions options_;  // of the flat buffers
    torch::ScalarType sum_dtype_;    // as asked (Undefined: the flat buffers')
    torch::TensorOptions sum_options_;  // of the slice sums
    int rank_ = 0;         // transient: set by beginMicroBatch
    size_t retired_ = 0;   // transient: buckets whose reduction has been added into the sums
    size_t range_end_ = 0;  // one past the last bucket this micro-batch reduces (beginRange's, or all)
    void retireBefore(size_t bucket);  // caller holds overlap_mutex_
    void ensureFlat(Bucket& b);

    std::mutex overlap_mutex_;  // hooks run on autograd's threads
    Collectives* overlap_ = nullptr;  // set while a window's buckets are started by hooks
    BucketReduction how_ = BucketReduction::AllReduce;
    std::atomic<bool> hooks_armed_{false};
    size_t next_launch_ = 0;
    int64_t launched_during_backward_ = 0;
};

}  // namespace trainbench
