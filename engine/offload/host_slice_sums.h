// HostSliceSums: a rank's running sums of its gradient slices, kept in host memory instead of
// on the device (runtime.offload at ZeRO stage >= 2 when the device cannot keep them).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "memory/memory_account.h"
#include "offload/pinned_slabs.h"
#include "offload/side_copies.h"

namespace trainbench {

// One sum per bucket, [its slice's elements], in host memory from pinned slabs (plain host
// memory without CUDA), counted in the host account. Two ways in (a store uses one):
// - add(): a micro-batch's reduced slice of bucket b comes down on a side stream into one of two
//   staging slices, as soon as its reduce-scatter is done, and a thread of this store adds it
//   into sum b once that copy has landed, so the caller (the backward's hooks) neither waits for
//   the copy nor makes the addition; it waits only when both staging slices are still being
//   added, two buckets behind. The additions are the device's would-be `sum += slice` in fp32
//   (or fp64), in the same order (one thread, first in first out): the same numbers bit for bit.
// - copy(): the device keeps the sums, and the last micro-batch's finished sum of bucket b comes
//   down into sum b, straight (no staging), while the backward goes on with earlier buckets (at
//   stage 1 the bucket's reduced slice, after its reduce-scatter). The host waits for none of
//   them until settle().
class HostSliceSums {
public:
    // `slice_numels`: each bucket's slice; `dtype`: the sums'; `device`: where the reduced slices
    // come from; `staging`: the reduced slices' dtype, for the two staging slices add() needs
    // (Undefined: none, copy() alone). A sum of another dtype than its slices takes each addition
    // rounded to its own (as the device's `sum += slice` would).
    HostSliceSums(const std::vector<int64_t>& slice_numels, torch::ScalarType dtype, const torch::Device& device,
                  MemoryAccount* host_account, torch::ScalarType staging);
    ~HostSliceSums();  // waits for the copies and additions in flight: their pinned memory goes with it
    HostSliceSums(const HostSliceSums&) = delete;
    HostSliceSums& operator=(const HostSliceSums&) = delete;

    // Adds bucket b's reduced slice (on the device, this rank's) into its sum.
    void add(size_t bucket, const torch::Tensor& reduced_slice);
    // Sum b becomes bucket b's device sum (which must not change until settle()), once
    // `before` has run on the copies' stream (see SideCopies::toHost).
    void copy(size_t bucket, const torch::Tensor& device_sum, const std::function<void()>& before = {});
    // Every addition and copy queued so far done: the sums are final until the next add().
    // Rethrows what an addition failed with.
    void settle();
    // Bucket b's sum, on the host (settled first).
    torch::Tensor sum(size_t bucket);
    // Every sum to zero (what a window starts from).
    void zero();
    int64_t bytes() const { return slabs_->bytes(); }
    int64_t bytesToHost() const { return copies_.bytesToHost(); }  // what came down into it

private:
    struct Pending {
        bool busy = false;  // copied into or being added from
        size_t bucket = 0;
        int64_t numel = 0;
    };
    SideCopies copies_;
    std::unique_ptr<PinnedSlabs> slabs_;
    std::vector<torch::Tensor> sums_;
    torch::Tensor staging_[2];
    int next_slot_ = 0;
    // copy(): each into its own sum, so none waits for another; the last one's event (slot 0)
    // stands for all of them (the side stream runs in order).
    bool copies_pending_ = false;

    // add()'s additions, on `adder_`: the slots in the order their copies were queued.
    std::mutex mutex_;
    std::condition_variable changed_;
    Pending pending_[2];
    std::deque<int> queued_;
    bool stopping_ = false;
    std::exception_ptr failure_;
    std::thread adder_;  // started by the first add()
    void addLanded();    // the thread: waits for each queued copy, adds it, frees its slot
    void waitIdle(std::unique_lock<std::mutex>& lock);  // nothing queued or being added
};

}  // namespace trainbench
