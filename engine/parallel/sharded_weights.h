// ShardedWeights: ZeRO stage 3's weights, each rank holding a slice of every unit, gathered per use.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "memory/memory_account.h"
#include "model/safetensors.h"
#include "model/weight_residency.h"
#include "comm/collectives.h"
#include "offload/slice_store.h"
#include "parallel/gradient_buckets.h"

namespace trainbench {

// The model's units (WeightResidency) are the gradient buckets, backward first: the buckets
// U - 1 - u hold unit u (with bf16 device weights two of them, see Options::bf16), each padded to
// a multiple of W. Rank r keeps elements [r * S, (r + 1) * S) of each bucket's weights as its
// shard (4P/W bytes, the fp32 master the optimizer steps; 2P/W for bf16 weights, whose master
// is the optimizer's); every parameter is a view into its bucket's flat buffer, whose storage
// exists only while the unit is gathered. Per micro-batch, in this order on every rank:
//   forward    all-gather of unit u before its forward, released after (u = 0..U-1);
//   backward   at unit u's boundary: the release of unit u + 1, the reduce-scatter of its
//              gradients, the all-gather of unit u (not for the embedding, whose backward reads
//              no weight) (u = U-1..0); unit u's gradients accumulate in place in its buckets;
//   end        the reduce-scatter of unit 0's gradients.
// So at most one unit's weights are whole at a time, its gradients forming, and the gradients of
// the unit after it in flight.
// A micro-batch that ends early (out of memory, a stop) makes the calls it has left with what
// it holds, so that every rank's calls still pair up; the window is then dropped by all.
// With runtime.offload all the shards live off the device: in the host account, or in a file
// of runtime.offload_dir whose next unit's shard is read while a unit is gathered and used.
// A unit may hold none of these parameters (under expert parallelism the routed experts are
// sharded by one instance over their replicas and the rest by another over the world, and
// only MoE blocks have routed experts): it has no bucket and makes no call.
class ShardedWeights : public WeightResidency {
public:
    struct Options {
        // runtime.offload all with offload_dir: the shards' scratch file; empty: tensors.
        std::string shard_file;
        // runtime.offload all: the account the shards are counted in (nullptr: the thread's).
        MemoryAccount* host_memory = nullptr;
        // runtime.offload all: the shards live off the device (in host memory or shard_file),
        // and the optimizer steps them where they are.
        bool on_host = false;
        // With on_host and no shard_file: the shards in host slabs (pinned on a GPU rank, whose
        // gathers then copy them up without the host waiting) rather than tensors of the device.
        bool host_slabs = false;
        // Per parameter (empty: none): held in bf16, rounded from its fp32 value when the shards
        // are taken (runtime.offload under bf16 autocast, which rounds the products' weights
        // anyway). Such parameters must fill buckets of their own (bucketGroups' `split`); their
        // shards are bf16 wherever they live and their gradients stay fp32 (grad_dtype).
        std::vector<bool> bf16;
    };
    // `units[u]`: indices into `params` of unit u's parameters (forward order, possibly none);
    // `reads[u]`: its backward reads its weights. `buckets` must have been built with
    // bucketGroups(units),
    // transient, sharded over the collectives' world. Takes this rank's shard of the weights
    // as they are now (every rank's the same) and frees the whole ones.
    ShardedWeights(const std::vector<torch::Tensor>& params, std::vector<std::vector<size_t>> units,
                   std::vector<bool> reads, GradientBuckets& buckets, Collectives& collectives,
                   const Options& options);
    ShardedWeights(const ShardedWeights&) = delete;
    ShardedWeights& operator=(const ShardedWeights&) = delete;

    // The buckets' groups for `units`: the last unit first, each unit's parameters last first;
    // with `split` (per parameter) a unit's parameters marked there in one bucket and the rest
    // in another (Options::bf16: one dtype a flat buffer).
    static std::vector<std::vector<size_t>> bucketGroups(const std::vector<std::vector<size_t>>& units,
                                                         const std::vector<bool>& split = {});

    // This rank's slice of bucket b's weights [S]: what the optimizer steps in place, until
    // releaseShard(b) (`modified`: it was stepped). One bucket at a time, and the one prefetched.
    torch::Tensor acquireShard(size_t bucket) { return shards_->acquire(bucket).front(); }
    void releaseShard(size_t bucket, bool modified) { shards_->release(bucket, modified); }
    void prefetchShard(size_t bucket) { shards_->prefetch(bucket); }
    void flushShards() { shards_->flush(); }
    // The shards live in host memory (or the file), not on the rank's device.
    bool shardsOnHost() const { return on_host_; }
    // The shards are the fp32 master the optimizer steps in place (off the device, none in bf16).
    bool shardsAreMaster() const { return on_host_ && !any_bf16_; }
    // The shards' file traffic since the start (0 with the shards in tensors).
    int64_t bytesRead() const { return shards_->bytesRead(); }
    int64_t bytesWritten() const { return shards_->bytesWritten(); }
    // The bytes of this rank's shards its gathers have taken from where they live since the
    // start (each gather of a unit: its buckets' slices, in their dtype).
    int64_t bytesGathered() const { return bytes_gathered_; }
    // Of those, the bytes that went up from host memory (the host step's path: a GPU's PCIe).
    int64_t bytesUp() const { return bytes_up_; }

    // Around each micro-batch's forward and backward (the buckets' micro-batch included; `last`:
    // the window's last, see GradientBuckets::beginMicroBatch).
    void beginMicroBatch(bool last = false);
    // Makes whatever calls the micro-batch has left (all of them for one that never ran),
    // releases every unit and sends the last buckets out.
    void endMicroBatch();

    // The unit-major window (runtime.window_schedule unit): unit u gathered once for all the
    // window's forwards through it, or all its backwards (the caller skips a unit whose
    // backward reads no weight), the next unit's shard in `direction` (+1, -1) read meanwhile;
    // released by releaseUnit. Every rank calls them in the same order (units 0..U-1, then
    // U-1..0), outside any micro-batch.
    void holdUnit(int64_t unit, int direction);
    void releaseUnit(int64_t unit) { afterForward(unit); }
    bool backwardReadsWeights(int64_t unit) const { return reads_[unit]; }

    void beforeForward(int64_t unit) override;
    void afterForward(int64_t unit) override;
    void beforeBackward(int64_t unit) override;

    // The whole weights under `names` (parallel to `params`), on the host, unit by unit: every
    // rank calls it (one all-gather per unit); rank 0 gets them, the others an empty list.
    NamedTensors gatherState(const std::vector<std::string>& names) const;
    // Copies of every parameter, whole, on every rank (each calls it: one all-gather per unit).
    std::vector<torch::Tensor> wholeParameters();
    int64_t unitCount() const { return static_cast<int64_t>(units_.size()); }

private:
    // The buckets hold the units with parameters, the last unit first: unit u's are
    // [first_bucket_[u], first_bucket_[u] + bucket_count_[u]); its successors' all come before.
    struct BucketRange {
        size_t first = 0, count = 0;
    };
    std::vector<BucketRange> bucket_range_;  // per unit
    std::vector<size_t> buckets_after_;       // per unit: the buckets of the units after it
    void gather(int64_t unit);
    // The shard of the next unit with parameters from `unit` on in `direction` (+1 forward,
    // -1 backward) starts coming in.
    void prefetchFrom(int64_t unit, int direction);
    void release(int64_t unit);
    void releaseAll();

    std::vector<torch::Tensor> params_;
    std::vector<std::vector<size_t>> units_;
    std::vector<bool> reads_;
    GradientBuckets& buckets_;
    Collectives& collectives_;
    std::vector<torch::Tensor> flats_;   // per bucket: [padded]; the parameters view it
    std::unique_ptr<SliceStore> shards_;  // per bucket: [S], this rank's
    std::vector<char> gathered_;         // per unit
    bool on_host_ = false;
    bool shards_cross_ = false;  // off the device on the host step's path: each gather copies up
    int64_t bytes_up_ = 0;
    bool any_bf16_ = false;
    int64_t bytes_gathered_ = 0;
    bool in_micro_batch_ = false;
    int64_t forward_next_ = 0;    // the next unit whose forward gathers
    int64_t backward_next_ = -1;  // the next unit whose backward boundary comes
};

}  // namespace trainbench
