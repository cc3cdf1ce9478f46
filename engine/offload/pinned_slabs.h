// PinnedSlabs: host memory for a fixed list of tensors, carved from a few large slabs (pinned
// when CUDA is there, so that copies to and from a GPU run asynchronously).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace trainbench {

// Every view starts on this boundary (bytes): any dtype's elements, and a cache line.
constexpr int64_t kSlabAlignment = 256;

// The requests are known up front (a store's slices): their sizes are packed in order into
// slabs of about `slab_bytes` (a request larger than that gets a slab of its own size), all
// allocated at once and freed together with the pool. The slabs are allocated with
// cudaHostAlloc when a CUDA device is present and `pin` asks for it (page-locked, exact sizes:
// torch's caching host allocator would round each to a power of two), else as CPU tensors
// counted by the thread's memory account. Pinned slabs are counted in the account that was
// the thread's when the pool was made, by hand.
class PinnedSlabs {
public:
    struct Options {
        int64_t slab_bytes = int64_t(256) << 20;
        bool pin = true;   // pinned when CUDA is available; false: always plain host memory
        std::string what;  // named in the errors: what these slabs hold
    };
    PinnedSlabs(const std::vector<int64_t>& request_bytes, Options options);
    ~PinnedSlabs();
    PinnedSlabs(const PinnedSlabs&) = delete;
    PinnedSlabs& operator=(const PinnedSlabs&) = delete;

    // The next request's region as [numel] of `dtype` (contents undefined): requests are taken
    // in the order they were given. Throws std::length_error naming `what` when every region
    // has been taken, or when numel elements do not fit the next one.
    torch::Tensor take(int64_t numel, torch::ScalarType dtype);

    int64_t slabCount() const { return static_cast<int64_t>(slabs_.size()); }
    int64_t bytes() const { return bytes_; }  // every slab's, together
    bool pinned() const { return pinned_; }

private:
    struct Region {
        size_t slab;
        int64_t offset, bytes;
    };
    Options options_;
    bool pinned_ = false;
    int64_t bytes_ = 0;
    std::vector<torch::Tensor> slabs_;  // kByte [slab bytes]
    std::vector<Region> regions_;
    size_t next_ = 0;
};

}  // namespace trainbench
