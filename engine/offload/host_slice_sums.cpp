// HostSliceSums: the slice sums in pinned slabs, each reduced slice added once its copy landed.
#include "offload/host_slice_sums.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace trainbench {
namespace {

// The slabs' requests: every sum, then the two staging slices of the widest.
std::vector<int64_t> slabRequests(const std::vector<int64_t>& slice_numels, torch::ScalarType dtype,
                                  torch::ScalarType staging) {
    std::vector<int64_t> bytes;
    for (int64_t n : slice_numels) bytes.push_back(n * int64_t(torch::elementSize(dtype)));
    const int64_t widest = slice_numels.empty() ? 0 : *std::max_element(slice_numels.begin(), slice_numels.end());
    if (staging != torch::ScalarType::Undefined) bytes.insert(bytes.end(), 2, widest * int64_t(torch::elementSize(staging)));
    return bytes;
}

}  // namespace

HostSliceSums::HostSliceSums(const std::vector<int64_t>& slice_numels, torch::ScalarType dtype,
                             const torch::Device& device, MemoryAccount* host_account, torch::ScalarType staging)
    : copies_(device) {
    // Counted in the host account: pinned slabs by hand, plain ones by the tracking allocator,
    // both against the account current while they are made.
    std::optional<ScopedMemoryAccount> host;
    if (host_account) host.emplace(host_account);
    PinnedSlabs::Options where;
    where.what = "the gradient slice sums";
    slabs_ = std::make_unique<PinnedSlabs>(slabRequests(slice_numels, dtype, staging), where);
    for (int64_t n : slice_numels) sums_.push_back(slabs_->take(n, dtype));
    const int64_t widest = slice_numels.empty() ? 0 : *std::max_element(slice_numels.begin(), slice_numels.end());
    if (staging != torch::ScalarType::Undefined)
        for (auto& slot : staging_) slot = slabs_->take(widest, staging);
    zero();
}

HostSliceSums::~HostSliceSums() {
    {
        std::unique_lock lock(mutex_);
        waitIdle(lock);
        stopping_ = true;
    }
    changed_.notify_all();
    if (adder_.joinable()) adder_.join();
    try {
        if (copies_pending_) copies_.waitHost(0);
    } catch (...) {
        // A failed device: nothing left to wait for.
    }
}

void HostSliceSums::add(size_t bucket, const torch::Tensor& reduced_slice) {
    if (!staging_[0].defined()) throw std::logic_error("HostSliceSums::add: made without staging slices");
    const int slot = next_slot_;
    next_slot_ = 1 - next_slot_;
    {
        // The slot's last slice added (two buckets back: its copy long queued).
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return !pending_[slot].busy || failure_; });
        if (failure_) std::rethrow_exception(failure_);
        if (!adder_.joinable()) adder_ = std::thread([this] { addLanded(); });
    }
    const int64_t n = reduced_slice.numel();
    copies_.toHost(staging_[slot].narrow(0, 0, n), reduced_slice, slot);
    {
        std::lock_guard lock(mutex_);
        pending_[slot] = {true, bucket, n};
        queued_.push_back(slot);
    }
    changed_.notify_all();
}

void HostSliceSums::addLanded() {
    torch::NoGradGuard no_grad;
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
        if (queued_.empty()) return;  // stopping, nothing left
        const int slot = queued_.front();
        const Pending p = pending_[slot];
        lock.unlock();
        std::exception_ptr error;
        try {
            copies_.waitHost(slot);
            sums_[p.bucket].add_(staging_[slot].narrow(0, 0, p.numel));
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (error && !failure_) failure_ = error;
        queued_.pop_front();
        pending_[slot].busy = false;
        changed_.notify_all();
    }
}

void HostSliceSums::waitIdle(std::unique_lock<std::mutex>& lock) {
    changed_.wait(lock, [&] { return queued_.empty(); });
}

void HostSliceSums::copy(size_t bucket, const torch::Tensor& device_sum, const std::function<void()>& before) {
    if (staging_[0].defined()) throw std::logic_error("HostSliceSums::copy: made with staging slices, for add()");
    // No host wait here (it runs in the backward's hooks): only settle() waits.
    copies_.toHost(sums_[bucket], device_sum, /*slot=*/0, before);
    copies_pending_ = true;
}

void HostSliceSums::settle() {
    {
        std::unique_lock lock(mutex_);
        waitIdle(lock);
        if (failure_) std::rethrow_exception(failure_);
    }
    if (copies_pending_) {
        copies_.waitHost(0);
        copies_pending_ = false;
    }
}

torch::Tensor HostSliceSums::sum(size_t bucket) {
    settle();
    return sums_[bucket];
}

void HostSliceSums::zero() {
    settle();
    for (auto& s : sums_) s.zero_();
}

}  // namespace trainbench
