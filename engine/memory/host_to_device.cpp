// Host-to-device copies of per-step inputs through pinned memory.
#include "memory/host_to_device.h"

namespace trainbench {

torch::Tensor copyToDevice(const torch::Tensor& host, const torch::Device& device) {
    if (host.device() == device) return host;
    if (!host.is_cpu() || device.is_cpu()) return host.to(device);
    const torch::Tensor staged = host.is_pinned() ? host : host.contiguous().pin_memory();
    return staged.to(device, /*non_blocking=*/true);
}

torch::Tensor copyToDevice(const torch::Tensor& host, const torch::Device& device, torch::ScalarType dtype) {
    return copyToDevice(host.is_cpu() ? host.to(dtype) : host, device).to(dtype);
}

}  // namespace trainbench
