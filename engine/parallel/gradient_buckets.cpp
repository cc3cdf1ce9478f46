// Gradient buckets: packing gradients into flat buffers, one collective per bucket.
#include "parallel/gradient_buckets.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace trainbench {

GradientBuckets::GradientBuckets(const std::vector<torch::Tensor>& params, int64_t bucket_bytes,
                                 int64_t first_bucket_bytes)
    : params_(params) {
    Bucket current;
    int64_t limit = first_bucket_bytes;
    for (size_t i = params.size(); i-- > 0;) {
        const auto& p = params[i];
        current.members.push_back(i);
        current.offsets.push_back(current.numel);
        current.numel += p.numel();
        if (current.numel * 4 >= limit) {
            buckets_.push_back(std::move(current));
            current = Bucket{};
            limit = bucket_bytes;
        }
    }
    if (!current.members.empty()) buckets_.push_back(std::move(current));
    place_.resize(params.size());
    for (size_t b = 0; b < buckets_.size(); ++b)
        for (size_t j = 0; j < buckets_[b].members.size(); ++j) place_[buckets_[b].members[j]] = {b, j};
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

void GradientBuckets::beginOverlap(Collectives& collectives) {
    std::lock_guard lock(overlap_mutex_);
    overlap_ = &collectives;
    hooks_armed_ = false;
    next_launch_ = 0;
    launched_during_backward_ = 0;
    for (auto& b : buckets_) {
        b.waiting = 0;
        for (size_t member : b.members) b.waiting += params_[member].requires_grad() ? 1 : 0;
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
    if (!hooks_armed_) return;
    const auto [bucket, member] = place_[param];
    Bucket& b = buckets_[bucket];
    if (!b.flat.defined()) pack(b);  // allocates; the slots of members still to come are rewritten
    torch::NoGradGuard no_grad;
    const auto& p = params_[param];
    b.flat.narrow(0, b.offsets[member], p.numel()).copy_(p.grad().reshape({-1}));
    if (--b.waiting > 0) return;
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].waiting == 0) {
        launch(next_launch_++);
        ++launched_during_backward_;
    }
}

void GradientBuckets::launch(size_t bucket) {
    buckets_[bucket].work = overlap_->allReduceAsync({buckets_[bucket].flat}, ReduceOp::Sum);
}

void GradientBuckets::launchRemaining() {
    std::lock_guard lock(overlap_mutex_);
    hooks_armed_ = false;
    for (; next_launch_ < buckets_.size(); ++next_launch_) {
        Bucket& b = buckets_[next_launch_];
        // Members the last backward did not reach: their gradients (or zeros) as they stand.
        if (b.waiting > 0) pack(b);
        launch(next_launch_);
    }
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
    if (keep)
        for (auto& b : buckets_) unpack(b, b.flat);
}

void GradientBuckets::pack(Bucket& b) {
    torch::NoGradGuard no_grad;
    // Allocated at the first reduction: a single rank never reduces and never pays for them.
    if (!b.flat.defined()) {
        const auto& first = params_[b.members.front()];
        auto dtype = first.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
        b.flat = torch::empty({b.numel}, first.options().dtype(dtype));
    }
    for (size_t j = 0; j < b.members.size(); ++j) {
        const auto& p = params_[b.members[j]];
        auto slot = b.flat.narrow(0, b.offsets[j], p.numel());
        if (p.grad().defined()) slot.copy_(p.grad().reshape({-1}));
        else slot.zero_();
    }
}

void GradientBuckets::unpack(Bucket& b, const torch::Tensor& source) {
    torch::NoGradGuard no_grad;
    for (size_t j = 0; j < b.members.size(); ++j) {
        auto& p = params_[b.members[j]];
        auto slot = source.narrow(0, b.offsets[j], p.numel()).view(p.sizes());
        if (!p.grad().defined()) p.mutable_grad() = torch::empty_like(p);
        p.mutable_grad().copy_(slot);
    }
}

void GradientBuckets::reduce(Collectives& collectives) {
    // The overlap's calls with no hooks armed: every bucket packed and started after the
    // backward, in order, then waited for.
    beginOverlap(collectives);
    launchRemaining();
    finishOverlap();
}

void GradientBuckets::reduceIntoSums(Collectives& collectives) {
    torch::NoGradGuard no_grad;
    for (auto& b : buckets_) {
        pack(b);
        std::vector<torch::Tensor> list{b.flat};
        collectives.allReduce(list, ReduceOp::Sum);
        if (!b.sums.defined()) b.sums = b.flat.clone();
        else b.sums.add_(b.flat);
    }
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

void GradientBuckets::completeLocally() {
    torch::NoGradGuard no_grad;
    for (auto& p : params_)
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
}

void GradientBuckets::dropSums() {
    for (auto& b : buckets_) b.sums = torch::Tensor();
}

void GradientBuckets::finishSums() {
    for (auto& b : buckets_) {
        if (!b.sums.defined()) continue;
        unpack(b, b.sums);
        b.sums = torch::Tensor();
    }
}

}  // namespace trainbench
