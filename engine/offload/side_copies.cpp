// SideCopies: a pool stream and three events per rank (two for the copies down, one to join).
#include "offload/side_copies.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <array>

namespace trainbench {

struct SideCopies::Cuda {
    c10::DeviceIndex device;
    c10::cuda::CUDAStream side;
    std::array<at::cuda::CUDAEvent, 2> landed;  // per slot: its last copy
    at::cuda::CUDAEvent ordered;                // the current stream's work before a side copy
    at::cuda::CUDAEvent done;                   // the side stream's work before a join
    // From the high-priority pool: ProcessGroupNCCL takes its streams from the low-priority one,
    // and a copy sharing a collective's stream would wait behind it.
    explicit Cuda(c10::DeviceIndex index) : device(index), side(c10::cuda::getStreamFromPool(true, index)) {}
};

SideCopies::SideCopies(const torch::Device& device) {
    if (device.is_cuda()) cuda_ = std::make_unique<Cuda>(device.index() < 0 ? c10::cuda::current_device() : device.index());
}

SideCopies::~SideCopies() = default;

namespace {

// `dst.copy_(src)` on the side stream, after what the compute stream has queued until now (the
// reduction that made a gradient slice; the reads and writes of a device slice).
template <class Cuda>
void copyOnSide(Cuda& cuda, const torch::Tensor& dst, const torch::Tensor& src) {
    c10::cuda::CUDAGuard on(cuda.device);
    cuda.ordered.record(c10::cuda::getCurrentCUDAStream(cuda.device));
    cuda.ordered.block(cuda.side);
    c10::cuda::CUDAStreamGuard side(cuda.side);
    dst.copy_(src, /*non_blocking=*/true);
    // The device side may be freed on the compute stream before the copy has run (a reduced
    // slice, once queued): its memory is not reused there until the side stream is past it.
    for (const torch::Tensor* t : {&dst, &src})
        if (t->is_cuda()) c10::cuda::CUDACachingAllocator::recordStream(t->storage().data_ptr(), cuda.side);
}

}  // namespace

void SideCopies::toHost(const torch::Tensor& dst, const torch::Tensor& src, int slot,
                        const std::function<void()>& before) {
    to_host_bytes_ += int64_t(src.nbytes());
    if (!cuda_) {
        if (before) before();
        dst.copy_(src);
        return;
    }
    if (before) {
        c10::cuda::CUDAGuard on(cuda_->device);
        c10::cuda::CUDAStreamGuard side(cuda_->side);
        before();
    }
    copyOnSide(*cuda_, dst, src);
    cuda_->landed[slot].record(cuda_->side);
}

void SideCopies::waitHost(int slot) {
    if (cuda_) cuda_->landed[slot].synchronize();
}

void SideCopies::toDevice(const torch::Tensor& dst, const torch::Tensor& src, int slot) {
    to_device_bytes_ += int64_t(src.nbytes());
    if (!cuda_) {
        dst.copy_(src);
        return;
    }
    copyOnSide(*cuda_, dst, src);
    if (slot >= 0) cuda_->landed[slot].record(cuda_->side);
}

void SideCopies::joinCompute() {
    if (!cuda_) return;
    c10::cuda::CUDAGuard on(cuda_->device);
    cuda_->done.record(cuda_->side);
    cuda_->done.block(c10::cuda::getCurrentCUDAStream(cuda_->device));
}

}  // namespace trainbench
