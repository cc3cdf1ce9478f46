// Sharded weights: storage of each unit's flat buffer allocated while gathered, freed after.
#include "parallel/sharded_weights.h"

#include <stdexcept>

#include <ATen/autocast_mode.h>

#include "memory/device_selection.h"

namespace trainbench {
namespace {

// The parameters keep their TensorImpl (autograd's saved tensors, the optimizer and the buckets
// hold it); only the bytes behind the shared storage come and go. A saved tensor of the
// forward reads the bytes gathered again for the backward.
void freeStorage(const torch::Tensor& flat) {
    c10::StorageImpl* storage = flat.storage().unsafeGetStorageImpl();
    storage->set_data_ptr_noswap(c10::DataPtr(nullptr, flat.device()));
    storage->set_nbytes(0);
}

void allocateStorage(const torch::Tensor& flat) {
    // The caching allocator allocates on the current device, which must be the buffer's.
    DeviceScope on(flat.device());
    c10::StorageImpl* storage = flat.storage().unsafeGetStorageImpl();
    const size_t bytes = static_cast<size_t>(flat.numel()) * flat.element_size();
    storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
    storage->set_nbytes(bytes);
}

}  // namespace

std::vector<std::vector<size_t>> ShardedWeights::bucketGroups(const std::vector<std::vector<size_t>>& units,
                                                              const std::vector<bool>& split) {
    std::vector<std::vector<size_t>> groups;
    for (size_t u = units.size(); u-- > 0;) {
        if (split.empty()) {
            groups.emplace_back(units[u].rbegin(), units[u].rend());
            continue;
        }
        std::vector<size_t> marked, rest;
        for (auto i = units[u].rbegin(); i != units[u].rend(); ++i) (split[*i] ? marked : rest).push_back(*i);
        for (auto* group : {&marked, &rest})
            if (!group->empty()) groups.push_back(std::move(*group));
    }
    return groups;
}

ShardedWeights::ShardedWeights(const std::vector<torch::Tensor>& params, std::vector<std::vector<size_t>> units,
                               std::vector<bool> reads, GradientBuckets& buckets, Collectives& collectives,
                               const Options& options)
    : params_(params),
      units_(std::move(units)),
      reads_(std::move(reads)),
      buckets_(buckets),
      collectives_(collectives),
      gathered_(units_.size(), 0),
      on_host_(options.on_host),
      shards_cross_(options.on_host && options.host_slabs) {
    torch::NoGradGuard no_grad;
    if (reads_.size() != units_.size()) throw std::logic_error("ShardedWeights: one backward flag per unit");
    // Each bucket's unit: the buckets hold the last unit first, each unit's one after another.
    std::vector<int64_t> unit_of(params_.size(), -1);
    for (size_t u = 0; u < units_.size(); ++u)
        for (size_t i : units_[u]) unit_of[i] = static_cast<int64_t>(u);
    bucket_range_.assign(units_.size(), {});
    std::vector<size_t> members(units_.size(), 0);
    int64_t previous = unitCount();
    for (size_t b = 0; b < static_cast<size_t>(buckets_.count()); ++b) {
        const int64_t u = unit_of[buckets_.members(b).front().param];
        for (const GradientBuckets::Member& m : buckets_.members(b))
            if (unit_of[m.param] != u)
                throw std::logic_error("ShardedWeights: the buckets were not built from these units (bucketGroups)");
        if (u > previous || (u < previous && bucket_range_[u].count > 0))
            throw std::logic_error("ShardedWeights: the buckets are not the units' in backward order (bucketGroups)");
        if (u < previous) bucket_range_[u].first = b;
        ++bucket_range_[u].count;
        members[u] += buckets_.members(b).size();
        previous = u;
    }
    buckets_after_.assign(units_.size(), 0);
    size_t after = 0;
    for (size_t u = units_.size(); u-- > 0;) {
        if (members[u] != units_[u].size())
            throw std::logic_error("ShardedWeights: the buckets were not built from these units (bucketGroups)");
        buckets_after_[u] = after;
        after += bucket_range_[u].count;
    }
    // Each bucket's dtype: bf16 where its parameters are held so, else theirs.
    auto held_bf16 = [&](size_t param) { return !options.bf16.empty() && options.bf16[param]; };
    std::vector<SliceParts> dtypes;
    for (size_t b = 0; b < static_cast<size_t>(buckets_.count()); ++b) {
        const auto& list = buckets_.members(b);
        const bool bf16 = held_bf16(list.front().param);
        for (const GradientBuckets::Member& m : list)
            if (held_bf16(m.param) != bf16)
                throw std::logic_error("ShardedWeights: bf16 and other parameters share a bucket (bucketGroups' split)");
        dtypes.push_back({bf16 ? torch::kBFloat16 : params_[list.front().param].scalar_type()});
        any_bf16_ = any_bf16_ || bf16;
    }
    const int rank = collectives_.rank();
    SliceHome home{options.shard_file, options.on_host && options.host_slabs, options.host_memory, "the weights' shards"};
    shards_ = makeSliceStore(home, buckets_.sliceNumels(), dtypes, params_[buckets_.members(0).front().param].options());
    // Each bucket's shard is stored as its flat buffer is made (in its dtype: bf16 weights
    // rounded here), and the whole buffer freed.
    for (size_t b = 0; b < static_cast<size_t>(buckets_.count()); ++b) {
        const auto& first = params_[buckets_.members(b).front().param];
        torch::Tensor flat = torch::zeros({buckets_.paddedNumel(b)}, first.options().dtype(dtypes[b].front()));
        for (const GradientBuckets::Member& m : buckets_.members(b)) {
            torch::Tensor& p = params_[m.param];
            if (!p.is_contiguous()) throw std::logic_error("ShardedWeights: a parameter is not contiguous");
            flat.narrow(0, m.offset, m.numel).copy_(p.reshape({-1}));
            p.set_data(flat.narrow(0, m.offset, m.numel).view(p.sizes()));
            // autograd accumulates a bf16 weight's gradient into its fp32 bucket view
            if (held_bf16(m.param)) p.set_grad_dtype(torch::kFloat32);
        }
        const int64_t n = buckets_.sliceNumel(b);
        shards_->acquire(b).front().copy_(flat.narrow(0, rank * n, n));
        shards_->release(b, true);
        freeStorage(flat);
        flats_.push_back(std::move(flat));
    }
}

std::vector<torch::Tensor> ShardedWeights::wholeParameters() {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> whole(params_.size());
    for (int64_t u = 0; u < unitCount(); ++u) {
        gather(u);
        for (size_t i : units_[u]) whole[i] = params_[i].detach().clone();
        release(u);
    }
    return whole;
}

void ShardedWeights::gather(int64_t unit) {
    torch::NoGradGuard no_grad;
    if (gathered_[unit] || units_[unit].empty()) return;
    gathered_[unit] = 1;
    const BucketRange range = bucket_range_[unit];
    for (size_t b = range.first; b < range.first + range.count; ++b) {
        allocateStorage(flats_[b]);
        const torch::Tensor shard = shards_->acquire(b).front();
        bytes_gathered_ += shard.numel() * shard.element_size();
        if (shards_cross_) bytes_up_ += shard.numel() * shard.element_size();
        // A pinned shard goes up without the host waiting: the optimizer writes shards only after
        // the host has waited for the compute stream's work so far (its first gradient copy).
        const bool up = flats_[b].is_cuda() && shard.is_cpu();
        collectives_.allGatherAsync(shard.to(flats_[b].device(), /*non_blocking=*/up && shard.is_pinned()), flats_[b])->wait();
        shards_->release(b, false);
    }
}

void ShardedWeights::prefetchFrom(int64_t unit, int direction) {
    for (; unit >= 0 && unit < unitCount(); unit += direction)
        if (!units_[unit].empty()) {
            // (a unit has at most two buckets: one staging slot each)
            const BucketRange range = bucket_range_[unit];
            for (size_t b = range.first; b < range.first + range.count; ++b) shards_->prefetch(b);
            return;
        }
}

void ShardedWeights::release(int64_t unit) {
    if (!gathered_[unit]) return;
    const BucketRange range = bucket_range_[unit];
    for (size_t b = range.first; b < range.first + range.count; ++b) freeStorage(flats_[b]);
    gathered_[unit] = 0;
}

void ShardedWeights::releaseAll() {
    for (size_t u = 0; u < units_.size(); ++u) release(static_cast<int64_t>(u));
}

void ShardedWeights::beginMicroBatch(bool last) {
    releaseAll();
    buckets_.beginMicroBatch(collectives_, /*hooks=*/false, last);
    in_micro_batch_ = true;
    forward_next_ = 0;
    backward_next_ = unitCount() - 1;
}

void ShardedWeights::beforeForward(int64_t unit) {
    if (in_micro_batch_) {
        if (unit != forward_next_) throw std::logic_error("ShardedWeights: units gathered out of order in the forward");
        gather(unit);
        prefetchFrom(unit + 1, +1);
        forward_next_ = unit + 1;
        return;
    }
    gather(unit);  // evaluation: no gradients, no buckets
}

void ShardedWeights::holdUnit(int64_t unit, int direction) {
    if (in_micro_batch_) throw std::logic_error("ShardedWeights: a unit held inside a micro-batch");
    gather(unit);
    prefetchFrom(unit + direction, direction);
}

void ShardedWeights::afterForward(int64_t unit) {
    release(unit);
    // Autocast's bf16 copies of the weights would keep the whole model alive until the forward
    // ends: dropped with the unit (the saved ones live on in the graph).
    if (!units_[unit].empty() && at::autocast::is_autocast_enabled(flats_[bucket_range_[unit].first].device().type()))
        at::autocast::clear_cache();
}

void ShardedWeights::beforeBackward(int64_t unit) {
    if (!in_micro_batch_ || unit != backward_next_)
        throw std::logic_error("ShardedWeights: a backward boundary out of order");
    // Every unit after this one has finished its backward: their weights go away, their
    // gradients go out (the bucket before them freed first), this unit's weights come back and
    // its gradients get their bucket. Whole at a time: this unit's weights and gradients, and
    // the next unit's gradients in flight.
    releaseAll();
    if (buckets_after_[unit] > 0) buckets_.launchThrough(buckets_after_[unit] - 1);
    if (!units_[unit].empty()) {
        if (reads_[unit]) gather(unit);
        const BucketRange range = bucket_range_[unit];
        for (size_t b = range.first; b < range.first + range.count; ++b) buckets_.viewGradientsInto(b);
        prefetchFrom(unit - 1, -1);
    }
    backward_next_ = unit - 1;
}

void ShardedWeights::endMicroBatch() {
    if (!in_micro_batch_) return;
    // The calls a micro-batch cut short did not make, in their order, with what this rank has.
    releaseAll();
    for (; forward_next_ < unitCount(); ++forward_next_) {
        gather(forward_next_);
        release(forward_next_);
    }
    while (backward_next_ >= 0) beforeBackward(backward_next_);
    releaseAll();
    in_micro_batch_ = false;
    buckets_.endMicroBatch();  // unit 0's reduce-scatter, and every bucket retired
}

NamedTensors ShardedWeights::gatherState(const std::vector<std::string>& names) const {
    torch::NoGradGuard no_grad;
    NamedTensors state;
    for (size_t b = 0; b < flats_.size(); ++b) {
        const torch::Tensor shard = shards_->acquire(b).front();
        torch::Tensor whole = torch::empty({buckets_.paddedNumel(b)}, flats_[b].options());
        collectives_.allGatherAsync(shard.to(whole.device()), whole)->wait();
        shards_->release(b, false);
        if (collectives_.rank() != 0) continue;
        whole = whole.cpu();
        for (const GradientBuckets::Member& m : buckets_.members(b))
            state.emplace_back(names[m.param], whole.narrow(0, m.offset, m.numel).view(params_[m.param].sizes()).clone());
    }
    return state;
}

}  // namespace trainbench
