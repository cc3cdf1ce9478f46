// Device selection through c10's device guards: CUDA's is registered by libtorch_cuda.
#include "memory/device_selection.h"

#include <mutex>

namespace trainbench {
namespace {

std::mutex observer_mutex;
std::function<void(const c10::Device&, DeviceRequest)>& observer() {
    static std::function<void(const c10::Device&, DeviceRequest)> f;
    return f;
}

void report(const c10::Device& device, DeviceRequest request) {
    std::lock_guard lock(observer_mutex);
    if (observer()) observer()(device, request);
}

}  // namespace

void selectThreadDevice(const c10::Device& device) {
    report(device, DeviceRequest::kThread);
    if (device.is_cpu()) return;
    c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
}

DeviceScope::DeviceScope(const c10::Device& device) {
    report(device, DeviceRequest::kScope);
    if (!device.is_cpu()) guard_.reset_device(device);
}

void observeDeviceRequests(std::function<void(const c10::Device&, DeviceRequest)> f) {
    std::lock_guard lock(observer_mutex);
    observer() = std::move(f);
}

}  // namespace trainbench
