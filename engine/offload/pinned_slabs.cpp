// PinnedSlabs: page-locked slabs through the CUDA runtime (or plain host tensors), views by offset.
#include "offload/pinned_slabs.h"

#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include <stdexcept>

#include "memory/memory_account.h"

namespace trainbench {
namespace {

int64_t alignedToSlab(int64_t bytes) { return (bytes + kSlabAlignment - 1) / kSlabAlignment * kSlabAlignment; }

bool cudaPresent() {
    try {
        return c10::cuda::device_count() > 0;
    } catch (...) {
        return false;
    }
}

void charge(MemoryAccount* account, int64_t bytes) {
    if (!account) return;
    account->notePeak(account->current.fetch_add(bytes) + bytes);
}

// A page-locked slab of exactly `bytes`, freed (and uncharged) with its last view.
torch::Tensor pinnedSlab(int64_t bytes, const std::string& what) {
    void* data = nullptr;
    if (cudaHostAlloc(&data, static_cast<size_t>(bytes), cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();  // clears the error, which would otherwise surface in the next CUDA call
        throw std::runtime_error("pinned host memory for " + what + ": cudaHostAlloc of " + std::to_string(bytes) +
                                 " bytes failed");
    }
    MemoryAccount* account = currentMemoryAccount();
    charge(account, bytes);
    return torch::from_blob(
        data, {bytes},
        [account, bytes](void* p) {
            cudaFreeHost(p);
            charge(account, -bytes);
        },
        torch::TensorOptions().dtype(torch::kByte));
}

}  // namespace

PinnedSlabs::PinnedSlabs(const std::vector<int64_t>& request_bytes, Options options) : options_(std::move(options)) {
    pinned_ = options_.pin && cudaPresent();
    // Requests in order, a slab closed when the next one would take it past slab_bytes.
    std::vector<int64_t> sizes;
    for (int64_t request : request_bytes) {
        const int64_t bytes = alignedToSlab(std::max<int64_t>(request, 1));
        if (sizes.empty() || sizes.back() + bytes > options_.slab_bytes) sizes.push_back(0);
        regions_.push_back({sizes.size() - 1, sizes.back(), bytes});
        sizes.back() += bytes;
    }
    for (int64_t size : sizes) {
        if (pinned_) {
            slabs_.push_back(pinnedSlab(size, options_.what));
        } else {
            // The CPU allocator aligns to 64 bytes: one alignment more, and the views start at
            // the first aligned byte.
            torch::Tensor raw = torch::empty({size + kSlabAlignment}, torch::kByte);
            const auto address = reinterpret_cast<uintptr_t>(raw.data_ptr());
            const int64_t skip = int64_t((kSlabAlignment - address % kSlabAlignment) % kSlabAlignment);
            slabs_.push_back(raw.narrow(0, skip, size));
        }
        bytes_ += size;
    }
}

PinnedSlabs::~PinnedSlabs() = default;

torch::Tensor PinnedSlabs::take(int64_t numel, torch::ScalarType dtype) {
    const int64_t bytes = numel * int64_t(torch::elementSize(dtype));
    if (next_ >= regions_.size())
        throw std::length_error("host slabs for " + options_.what + ": all " + std::to_string(regions_.size()) +
                                " regions (" + std::to_string(bytes_) + " bytes) are taken; a request of " +
                                std::to_string(bytes) + " bytes more does not fit");
    const Region& region = regions_[next_];
    if (bytes > region.bytes)
        throw std::length_error("host slabs for " + options_.what + ": region " + std::to_string(next_) + " holds " +
                                std::to_string(region.bytes) + " bytes, a request of " + std::to_string(bytes) +
                                " bytes does not fit");
    ++next_;
    return slabs_[region.slab].narrow(0, region.offset, bytes).view(dtype);
}

}  // namespace trainbench
