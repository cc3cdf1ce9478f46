// Gradient buckets: the parameters' gradients as views of flat buffers, one collective per bucket.
#include "parallel/gradient_buckets.h"

#include <algorithm>
#include <optional>

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace trainbench {

GradientBuckets::GradientBuckets(const std::vector<torch::Tensor>& params, int64_t bucket_bytes,
                                 int64_t first_bucket_bytes, int64_t shards, bool transient)
    : GradientBuckets(params, shards, transient, SliceSums::OnDevice, torch::ScalarType::Undefined, Layout{}) {
    std::vector<size_t> current;
    int64_t numel = 0;
    int64_t limit = first_bucket_bytes;
    for (size_t i = params.size(); i-- > 0;) {
        current.push_back(i);
        numel += params[i].numel();
        if (numel * 4 >= limit) {
            addBucket(current);
            current.clear();
            numel = 0;
            limit = bucket_bytes;
        }
    }
    if (!current.empty()) addBucket(current);
}

GradientBuckets::GradientBuckets(const std::vector<torch::Tensor>& params, const std::vector<std::vector<size_t>>& groups,
                                 int64_t shards, bool transient, const SliceSumOptions& options)
    : GradientBuckets(params, shards, transient, options.where, options.dtype, Layout{}) {
    const SliceSums sums = options.where;
    if ((sums != SliceSums::OnDevice || options.dtype != torch::ScalarType::Undefined) && !transient)
        throw std::logic_error("GradientBuckets: only transient buckets keep slice sums (on the host, in a file, in another dtype)");
    std::vector<char> placed(params.size(), 0);
    for (const auto& group : groups) {
        for (size_t i : group) {
            if (i >= params.size() || placed[i]) throw std::logic_error("GradientBuckets: a parameter in no or two groups");
            placed[i] = 1;
        }
        if (!group.empty()) addBucket(group);
    }
    if (std::find(placed.begin(), placed.end(), 0) != placed.end())
        throw std::logic_error("GradientBuckets: a parameter in no group");
    if (sums == SliceSums::InFile && !buckets_.empty()) {
        if (options.file.empty()) throw std::logic_error("GradientBuckets: SliceSums::InFile without a file");
        // (the file's two staging slots: host memory, in the account the other host tiers use)
        std::optional<ScopedMemoryAccount> host;
        if (options.host_account) host.emplace(options.host_account);
        file_sums_ = makeFileSliceStore(options.file, sliceNumels(), 1, sumDtype());
    } else if (sums != SliceSums::OnDevice && !buckets_.empty()) {
        // OnHost: the reduced slices come down in the gradients' dtype, added into sums of theirs.
        const bool staging = sums == SliceSums::OnHost;
        host_sums_ = std::make_unique<HostSliceSums>(sliceNumels(), sumDtype(), options_.device(), options.host_account,
                                                     staging ? options_.dtype().toScalarType() : torch::ScalarType::Undefined);
    }
    landed_.assign(buckets_.size(), 0);
}

GradientBuckets::GradientBuckets(const std::vector<torch::Tensor>& params, int64_t shards, bool transient,
                                 SliceSums sums, torch::ScalarType sum_dtype, Layout)
    : params_(params),
      bucket_of_(params.size()),
      member_of_(params.size()),
      arrived_(params.size(), 0),
      shards_(std::max<int64_t>(shards, 1)),
      transient_(transient),
      sums_where_(sums),
      sum_dtype_(sum_dtype) {
    for (size_t i = 0; i < params.size(); ++i) index_of_[params[i].unsafeGetTensorImpl()] = i;
}

void GradientBuckets::addBucket(const std::vector<size_t>& params) {
    torch::NoGradGuard no_grad;
    Bucket b;
    int64_t numel = 0;
    for (size_t i : params) {
        b.members.push_back({i, numel, params_[i].numel()});
        numel += params_[i].numel();
    }
    // Padded so that every rank's slice has the same length; the padding stays zero.
    b.padded = (numel + shards_ - 1) / shards_ * shards_;
    const auto& first = params_[params.front()];
    const auto dtype = first.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    options_ = first.options().dtype(dtype);
    sum_options_ = options_.dtype(sum_dtype_ == torch::ScalarType::Undefined ? dtype : sum_dtype_);
    if (transient_) {
        // (InFile, DownWhenFinished: made at the bucket's first micro-batch of a window, gone
        // once it has left the device)
        if (sums_where_ == SliceSums::OnDevice || sums_where_ == SliceSums::CopiedDown)
            b.slice_sum = torch::zeros({b.padded / shards_}, sum_options_);
    } else b.flat = torch::zeros({b.padded}, options_);
    for (size_t j = 0; j < b.members.size(); ++j) {
        const Member& m = b.members[j];
        auto& p = params_[m.param];
        bucket_of_[m.param] = buckets_.size();
        member_of_[m.param] = j;
        if (p.requires_grad() && !transient_) p.mutable_grad() = b.flat.narrow(0, m.offset, m.numel).view(p.sizes());
    }
    buckets_.push_back(std::move(b));
}

// Autograd calls it after accumulating a parameter's gradient into .grad (once per backward:
// every use of the parameter is summed before its accumulation node runs).
class GradientBuckets::ReadyHook : public torch::autograd::PostAccumulateGradHook {
public:
    ReadyHook(GradientBuckets* owner, size_t param) : owner_(owner), param_(param) {}
    void operator()(const torch::autograd::Variable&) override { owner_->onGradientReady(param_); }

private:
    GradientBuckets* owner_;
    size_t param_;
};

GradientBuckets::~GradientBuckets() {
    for (auto& p : params_)
        if (p.requires_grad()) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

void GradientBuckets::copySlicesDown(MemoryAccount* host_account) {
    if (transient_ || buckets_.empty()) throw std::logic_error("GradientBuckets::copySlicesDown: persistent buckets only");
    sums_where_ = SliceSums::CopiedDown;
    host_sums_ = std::make_unique<HostSliceSums>(sliceNumels(), options_.dtype().toScalarType(), options_.device(),
                                                 host_account, /*staging=*/torch::ScalarType::Undefined);
    landed_.assign(buckets_.size(), 0);
}

void GradientBuckets::zero() {
    torch::NoGradGuard no_grad;
    if (!transient_) {
        // The copies of the slices still in flight read the buffers zeroed here.
        if (host_sums_) host_sums_->settle();
        std::fill(landed_.begin(), landed_.end(), 0);
        for (auto& b : buckets_) b.flat.zero_();
        return;
    }
    // First the copies of a dropped window still in flight (CopiedDown: from the device sums
    // zeroed below).
    if (host_sums_ && sums_where_ == SliceSums::OnHost) host_sums_->zero();
    else if (host_sums_) host_sums_->settle();
    std::fill(landed_.begin(), landed_.end(), 0);
    for (auto& b : buckets_) {
        if (sumsFinishedOnDevice()) b.slice_sum = torch::Tensor();
        else if (b.slice_sum.defined()) b.slice_sum.zero_();
        b.flat = torch::Tensor();
        b.work.reset();
    }
    for (auto& p : params_)
        if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
}

torch::Tensor GradientBuckets::slice(size_t bucket, int rank) const {
    const Bucket& b = buckets_[bucket];
    if (sliceSumsOnHost()) return host_sums_->sum(bucket);
    if (sums_where_ == SliceSums::InFile) throw std::logic_error("GradientBuckets::slice: the sums are in a file (acquireSum)");
    if (transient_) return b.slice_sum;
    const int64_t n = b.padded / shards_;
    return b.flat.narrow(0, rank * n, n);
}

torch::Tensor GradientBuckets::landedSlice(size_t bucket) const {
    if (sums_where_ != SliceSums::CopiedDown || !landed_[bucket]) return torch::Tensor();
    return host_sums_->sum(bucket);
}

torch::Tensor GradientBuckets::gatherBuffer(size_t bucket) const {
    return transient_ ? torch::empty({buckets_[bucket].padded}, options_) : buckets_[bucket].flat;
}

void GradientBuckets::ensureFlat(Bucket& b) {
    if (!b.flat.defined()) b.flat = torch::zeros({b.padded}, options_);
}

void GradientBuckets::beginMicroBatch(Collectives& collectives, bool hooks, bool last) {
    beginOverlap(collectives, BucketReduction::ReduceScatter);
    {
        std::lock_guard lock(overlap_mutex_);
        rank_ = collectives.rank();
        last_micro_batch_ = last;
        retired_ = 0;
        range_end_ = buckets_.size();
        for (auto& b : buckets_) b.flat = torch::Tensor();
    }
    if (hooks) armHooks();
}

void GradientBuckets::launchThrough(size_t bucket) {
    std::lock_guard lock(overlap_mutex_);
    for (; next_launch_ <= bucket && next_launch_ < buckets_.size(); ++next_launch_) {
        // Gradients viewing the bucket (viewGradientsInto) need no copy and no allocation here;
        // the one before is then waited for and freed.
        takeGradients(buckets_[next_launch_]);
        launch(next_launch_);
        ++launched_during_backward_;
        retireBefore(next_launch_);
    }
}

void GradientBuckets::viewGradientsInto(size_t bucket) {
    std::lock_guard lock(overlap_mutex_);
    torch::NoGradGuard no_grad;
    Bucket& b = buckets_[bucket];
    ensureFlat(b);
    for (const Member& m : b.members) {
        auto& p = params_[m.param];
        if (p.requires_grad() && !p.grad().defined())
            p.mutable_grad() = b.flat.narrow(0, m.offset, m.numel).view(p.sizes());
    }
}

void GradientBuckets::takeGradients(Bucket& b) {
    torch::NoGradGuard no_grad;
    ensureFlat(b);
    for (const Member& m : b.members) {
        auto& p = params_[m.param];
        if (!p.grad().defined()) continue;
        // A view of this bucket (viewGradientsInto) holds its gradient in place already.
        if (!p.grad().is_alias_of(b.flat)) b.flat.narrow(0, m.offset, m.numel).add_(p.grad().reshape({-1}));
        p.mutable_grad() = torch::Tensor();
    }
}

void GradientBuckets::endMicroBatch() {
    {
        std::lock_guard lock(overlap_mutex_);
        torch::NoGradGuard no_grad;
        hooks_armed_ = false;
        for (; next_launch_ < range_end_; ++next_launch_) {
            // Gradients the hooks did not take (none with hooks; all of them without) go in first.
            takeGradients(buckets_[next_launch_]);
            launch(next_launch_);
            retireBefore(next_launch_);  // the one before waited for and freed: about two whole at a time
        }
        retireBefore(range_end_);
    }
    overlap_ = nullptr;
    // A gradient made after its bucket went out would be lost: a bug in the caller's order.
    for (auto& p : params_)
        if (p.grad().defined())
            throw std::logic_error("a gradient arrived after its bucket was reduced, or outside the unit being reduced "
                                   "(the unit order of the backward)");
}

void GradientBuckets::beginRange(Collectives& collectives, size_t first, size_t count, bool last) {
    if (!transient_) throw std::logic_error("GradientBuckets::beginRange: transient buckets only");
    beginOverlap(collectives, BucketReduction::ReduceScatter);
    {
        std::lock_guard lock(overlap_mutex_);
        rank_ = collectives.rank();
        last_micro_batch_ = last;
        retired_ = next_launch_ = first;
        range_end_ = std::min(first + count, buckets_.size());
        for (size_t b = first; b < range_end_; ++b) buckets_[b].flat = torch::Tensor();
    }
    for (size_t b = first; b < range_end_; ++b) viewGradientsInto(b);
}

void GradientBuckets::retireBefore(size_t bucket) {
    torch::NoGradGuard no_grad;
    for (; retired_ < bucket; ++retired_) {
        Bucket& b = buckets_[retired_];
        b.work->wait();
        b.work.reset();
        const int64_t n = b.padded / shards_;
        const torch::Tensor reduced = b.flat.narrow(0, rank_ * n, n);
        if (sums_where_ == SliceSums::OnHost) {
            // Queued down now, added once it has landed; the bucket can go at once.
            host_sums_->add(retired_, reduced);
        } else if (sumsFinishedOnDevice()) {
            // From zeros, as the sums on the device: the same additions, the same bits.
            if (!b.slice_sum.defined()) b.slice_sum = torch::zeros({n}, sum_options_);
            b.slice_sum.add_(reduced);
            if (last_micro_batch_) {
                if (sum_finished_) sum_finished_(retired_, b.slice_sum);
                if (sums_where_ == SliceSums::InFile) {
                    file_sums_->acquireToOverwrite(retired_).front().copy_(b.slice_sum);
                    if (b.slice_sum.is_cuda()) file_bytes_down_ += int64_t(b.slice_sum.nbytes());
                    file_sums_->release(retired_, /*modified=*/true);
                } else {
                    host_sums_->copy(retired_, b.slice_sum);  // (the device side may go at once)
                }
                b.slice_sum = torch::Tensor();
            }
        } else {
            b.slice_sum.add_(reduced);
            if (host_sums_) {
                // CopiedDown: the last micro-batch's sum is the window's; any other changes it.
                if (last_micro_batch_) host_sums_->copy(retired_, b.slice_sum);
                landed_[retired_] = last_micro_batch_;
            }
        }
        b.flat = torch::Tensor();
    }
}

void GradientBuckets::beginOverlap(Collectives& collectives, BucketReduction how) {
    std::lock_guard lock(overlap_mutex_);
    overlap_ = &collectives;
    how_ = how;
    hooks_armed_ = false;
    next_launch_ = 0;
    launched_during_backward_ = 0;
    std::fill(arrived_.begin(), arrived_.end(), 0);
    for (auto& b : buckets_) {
        b.waiting = 0;
        for (const Member& m : b.members) b.waiting += params_[m.param].requires_grad() ? 1 : 0;
        b.work.reset();
    }
}

void GradientBuckets::armHooks() {
    std::lock_guard lock(overlap_mutex_);
    for (size_t i = 0; i < params_.size(); ++i) {
        auto& p = params_[i];
        // Installed at the first window that overlaps: a single rank never pays for hooks.
        if (p.requires_grad() && !torch::autograd::impl::post_acc_grad_hooks(p))
            torch::autograd::impl::set_post_acc_grad_hooks(p, std::make_unique<ReadyHook>(this, i));
    }
    hooks_armed_ = true;
}

void GradientBuckets::onGradientReady(size_t param) {
    // A micro-batch before the last: gradients keep accumulating. Checked before the lock,
    // since every parameter of every micro-batch comes through here.
    if (!hooks_armed_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(overlap_mutex_);
    if (!hooks_armed_ || arrived_[param]) return;
    arrived_[param] = 1;
    Bucket& b = buckets_[bucket_of_[param]];
    if (transient_) {
        // Into the bucket, and the parameter's own copy freed.
        torch::NoGradGuard no_grad;
        ensureFlat(b);
        auto& p = params_[param];
        const Member& m = b.members[member_of_[param]];
        b.flat.narrow(0, m.offset, m.numel).copy_(p.grad().reshape({-1}));
        p.mutable_grad() = torch::Tensor();
    }
    // (Otherwise the gradient is already in its bucket, a view: only the count moves.)
    if (--b.waiting > 0) return;
    launchReady();
}

void GradientBuckets::launchReady() {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].waiting == 0) {
        launch(next_launch_++);
        ++launched_during_backward_;
        // Transient: the bucket before the one just started is waited for and freed, so about
        // two buckets are whole at a time.
        if (transient_ && next_launch_ >= 2) retireBefore(next_launch_ - 1);
    }
}

void GradientBuckets::noGradientComing(const std::vector<torch::Tensor>& params) {
    std::lock_guard lock(overlap_mutex_);
    if (!hooks_armed_) return;
    for (const auto& p : params) {
        auto found = index_of_.find(p.unsafeGetTensorImpl());
        if (found == index_of_.end() || arrived_[found->second] || !p.requires_grad()) continue;
        arrived_[found->second] = 1;  // its slot keeps what earlier micro-batches left (or zeros)
        --buckets_[bucket_of_[found->second]].waiting;
    }
    launchReady();
}

void GradientBuckets::launch(size_t bucket) {
    Bucket& b = buckets_[bucket];
    if (transient_) ensureFlat(b);  // a bucket of idle experts only has had no gradient to hold
    if (how_ == BucketReduction::AllReduce) {
        b.work = overlap_->allReduceAsync({b.flat}, ReduceOp::Sum);
    } else {
        // In place: this rank's slice of the bucket receives its slice of the sum.
        const int64_t slice = b.flat.numel() / shards_;
        b.work = overlap_->reduceScatterAsync(b.flat, b.flat.narrow(0, overlap_->rank() * slice, slice));
        if (!transient_ && sums_where_ == SliceSums::CopiedDown) {
            // Stage 1 under the host step: the window's reduced slice comes down once the
            // reduce-scatter is done, the device ordering the copy after it.
            std::shared_ptr<CollectiveWork> work = b.work;
            host_sums_->copy(bucket, b.flat.narrow(0, overlap_->rank() * slice, slice), [work] { work->wait(); });
            landed_[bucket] = 1;
        }
    }
}

void GradientBuckets::launchRemaining() {
    std::lock_guard lock(overlap_mutex_);
    hooks_armed_ = false;
    for (; next_launch_ < buckets_.size(); ++next_launch_) launch(next_launch_);
}

void GradientBuckets::finishOverlap(bool keep) {
    // Every bucket is waited for even after a failure, so no call is left holding a buffer.
    std::exception_ptr error;
    for (auto& b : buckets_) {
        if (!b.work) continue;
        try {
            b.work->wait();
        } catch (...) {
            if (!error) error = std::current_exception();
        }
        b.work.reset();
    }
    overlap_ = nullptr;
    if (error) std::rethrow_exception(error);
    if (!keep) zero();
}

void GradientBuckets::reduce(Collectives& collectives, BucketReduction how) {
    beginOverlap(collectives, how);
    launchRemaining();
    finishOverlap();
}

void GradientBuckets::reduceIntoSums(Collectives& collectives) {
    torch::NoGradGuard no_grad;
    for (auto& b : buckets_) {
        std::vector<torch::Tensor> list{b.flat};
        collectives.allReduce(list, ReduceOp::Sum);
        if (!b.sums.defined()) b.sums = b.flat.clone();
        else b.sums.add_(b.flat);
        b.flat.zero_();
    }
}

void GradientBuckets::dropSums() {
    for (auto& b : buckets_) b.sums = torch::Tensor();
}

void GradientBuckets::finishSums() {
    torch::NoGradGuard no_grad;
    for (auto& b : buckets_) {
        if (!b.sums.defined()) continue;
        b.flat.copy_(b.sums);
        b.sums = torch::Tensor();
    }
}

}  // namespace trainbench
