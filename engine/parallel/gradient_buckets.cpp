// Gradient buckets: packing gradients into flat buffers, one collective per bucket.
#include "parallel/gradient_buckets.h"

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
    for (auto& b : buckets_) {
        pack(b);
        std::vector<torch::Tensor> list{b.flat};
        collectives.allReduce(list, ReduceOp::Sum);
        unpack(b, b.flat);
    }
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

void GradientBuckets::finishSums() {
    for (auto& b : buckets_) {
        if (!b.sums.defined()) continue;
        unpack(b, b.sums);
        b.sums = torch::Tensor();
    }
}

}  // namespace trainbench
