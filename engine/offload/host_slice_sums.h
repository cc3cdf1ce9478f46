// HostSliceSums: a rank's running sums of its gradient slices, kept in host memory instead of
// on the device (runtime.offload at ZeRO stage >= 2 when the device cannot keep them).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "memory/memory_account.h"
#include "offload/pinned_slabs.h"
#include "offload/side_copies.h"

namespace trainbench {

// One sum per bucket, [its slice's elements], in host memory from pinned slabs (plain host
// memory without CUDA), counted in the host account. Two ways in:
// - add(): a micro-batch's reduced slice of bucket b comes down on a side stream into one of two
//   staging slices, as soon as its reduce-scatter is done, and the host adds it into sum b once
//   that copy has landed: when its staging slice is needed again (two buckets later) or at
//   settle(). So the host waits for a copy only when it is two buckets behind, and the device's
//   slice can be freed as soon as the copy is queued. The additions are the device's would-be
//   `sum += slice` in fp32 (or fp64), in the same order: the same numbers bit for bit.
// - copy(): the device keeps the sums, and the last micro-batch's finished sum of bucket b comes
//   down into sum b, straight (no staging), while the backward goes on with earlier buckets (at
//   stage 1 the bucket's reduced slice, after its reduce-scatter). The host waits for none of
//   them until settle(). (A store uses one of the two ways.)
class HostSliceSums {
public:
    // `slice_numels`: each bucket's slice; `device`: where the reduced slices come from;
    // `staging`: the two staging slices add() needs (copy() alone needs none).
    HostSliceSums(const std::vector<int64_t>& slice_numels, torch::ScalarType dtype, const torch::Device& device,
                  MemoryAccount* host_account, bool staging = true);
    ~HostSliceSums();  // waits for the copies in flight: their pinned memory goes with it
    HostSliceSums(const HostSliceSums&) = delete;
    HostSliceSums& operator=(const HostSliceSums&) = delete;

    // Adds bucket b's reduced slice (on the device, this rank's) into its sum.
    void add(size_t bucket, const torch::Tensor& reduced_slice);
    // Sum b becomes bucket b's device sum (which must not change until settle()), once
    // `before` has run on the copies' stream (see SideCopies::toHost).
    void copy(size_t bucket, const torch::Tensor& device_sum, const std::function<void()>& before = {});
    // Every addition queued so far done: the sums are final until the next add().
    void settle();
    // Bucket b's sum, on the host (settled first).
    torch::Tensor sum(size_t bucket);
    // Every sum to zero (what a window starts from).
    void zero();
    int64_t bytes() const { return slabs_->bytes(); }

private:
    struct Pending {
        bool busy = false;
        bool added = false;  // add(): the staging slice goes into the sum once landed; copy(): landed is all
        size_t bucket = 0;
        int64_t numel = 0;
    };
    SideCopies copies_;
    std::unique_ptr<PinnedSlabs> slabs_;
    std::vector<torch::Tensor> sums_;
    torch::Tensor staging_[2];
    Pending pending_[2];
    int next_slot_ = 0;
    // copy(): each into its own sum, so none waits for another; the last one's event (slot 0)
    // stands for all of them (the side stream runs in order).
    bool copies_pending_ = false;

    int nextSlot();       // the slot the next copy takes, its previous copy landed
    void land(int slot);  // waits for the slot's copy (and adds it into its sum)
};

}  // namespace trainbench
