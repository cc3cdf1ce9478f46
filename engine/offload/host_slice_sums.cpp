// HostSliceSums: the slice sums in pinned slabs, each reduced slice added once its copy landed.
#include "offload/host_slice_sums.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace trainbench {
namespace {

// The slabs' requests: every sum, then the two staging slices of the widest.
std::vector<int64_t> slabRequests(const std::vector<int64_t>& slice_numels, torch::ScalarType dtype, bool staging) {
    const int64_t element = int64_t(torch::elementSize(dtype));
    std::vector<int64_t> bytes;
    for (int64_t n : slice_numels) bytes.push_back(n * element);
    const int64_t widest = slice_numels.empty() ? 0 : *std::max_element(slice_numels.begin(), slice_numels.end());
    if (staging) bytes.insert(bytes.end(), 2, widest * element);
    return bytes;
}

}  // namespace

HostSliceSums::HostSliceSums(const std::vector<int64_t>& slice_numels, torch::ScalarType dtype,
                             const torch::Device& device, MemoryAccount* host_account, bool staging)
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
    if (staging)
        for (auto& slot : staging_) slot = slabs_->take(widest, dtype);
    zero();
}

HostSliceSums::~HostSliceSums() {
    try {
        for (int slot : {0, 1})
            if (pending_[slot].busy || (slot == 0 && copies_pending_)) copies_.waitHost(slot);
    } catch (...) {
        // A failed device: nothing left to wait for.
    }
}

int HostSliceSums::nextSlot() {
    const int slot = next_slot_;
    next_slot_ = 1 - next_slot_;
    if (pending_[slot].busy) land(slot);  // two buckets back: its copy has long been queued
    return slot;
}

void HostSliceSums::add(size_t bucket, const torch::Tensor& reduced_slice) {
    if (!staging_[0].defined()) throw std::logic_error("HostSliceSums::add: made without staging slices");
    const int slot = nextSlot();
    const int64_t n = reduced_slice.numel();
    copies_.toHost(staging_[slot].narrow(0, 0, n), reduced_slice, slot);
    pending_[slot] = {true, true, bucket, n};
}

void HostSliceSums::copy(size_t bucket, const torch::Tensor& device_sum, const std::function<void()>& before) {
    if (staging_[0].defined()) throw std::logic_error("HostSliceSums::copy: made with staging slices, for add()");
    // No host wait here (it runs in the backward's hooks): only settle() waits.
    copies_.toHost(sums_[bucket], device_sum, /*slot=*/0, before);
    copies_pending_ = true;
}

void HostSliceSums::land(int slot) {
    torch::NoGradGuard no_grad;
    copies_.waitHost(slot);
    Pending& p = pending_[slot];
    if (p.added) sums_[p.bucket].add_(staging_[slot].narrow(0, 0, p.numel));
    p.busy = false;
}

void HostSliceSums::settle() {
    // The older of the two first, so each sum takes its additions in the order they came.
    for (int slot : {next_slot_, 1 - next_slot_})
        if (pending_[slot].busy) land(slot);
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
