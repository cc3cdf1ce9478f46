// SideCopies: copies between a rank's device and host memory on a stream of their own, ordered
// by events rather than by the host waiting for the device.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include <torch/torch.h>

namespace trainbench {

// On a CUDA device the copies run on a stream from c10's pool, non-blocking (asynchronous when
// the host side is pinned): a copy to the host starts once the work queued so far on the
// device's current stream is done, and the host waits for that copy's event only; copies to the
// device are joined into the current stream before what reads them. On any other device the
// copies are plain copies, made at once, and the waits do nothing: the same code runs on CPU
// rank threads.
// Lifetimes: the host side of a copy must live (and stay unwritten) until the host has waited
// for it (to the host) or joinCompute() (to the device) has been called; the device side may be
// freed at once (its memory is held for the side stream).
class SideCopies {
public:
    explicit SideCopies(const torch::Device& device);
    ~SideCopies();
    SideCopies(const SideCopies&) = delete;
    SideCopies& operator=(const SideCopies&) = delete;

    // host `dst` <- device `src`, after the current stream's work; `slot` (0 or 1) names the
    // event waitHost() waits for (two copies in flight: the next bucket's while one is used).
    // `before` runs first with the side stream current: a collective's wait() there orders the
    // copy after the collective on the device, the host not waiting (elsewhere the host waits).
    void toHost(const torch::Tensor& dst, const torch::Tensor& src, int slot,
                const std::function<void()>& before = {});
    // The host waits for the last copy of `slot` (either way; the side stream runs in order, so
    // every copy before it is done too).
    void waitHost(int slot);
    // device `dst` <- host `src`, after the current stream's work and the side copies before it;
    // with a `slot` (0 or 1) waitHost() can wait for it (before `src` is written again).
    void toDevice(const torch::Tensor& dst, const torch::Tensor& src, int slot = -1);
    // The current stream waits (on the device) for every copy made so far.
    void joinCompute();
    // The bytes copied each way since it was made (the host link's traffic: PCIe on a GPU; on
    // CPU ranks the copies the host step's path makes in their place).
    int64_t bytesToHost() const { return to_host_bytes_.load(); }
    int64_t bytesToDevice() const { return to_device_bytes_.load(); }

private:
    struct Cuda;
    std::unique_ptr<Cuda> cuda_;  // null off CUDA
    std::atomic<int64_t> to_host_bytes_{0}, to_device_bytes_{0};
};

}  // namespace trainbench
