// Which GPU a thread works on. c10's caching allocator, the current stream and NCCL's
// communicator all take the thread's *current* CUDA device, not a tensor's: a rank thread on
// cuda:1 that never selects it allocates raw storage (ZeRO-3's gathered units), and makes its
// streams, on cuda:0.
#pragma once

#include <functional>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/DeviceGuard.h>

namespace trainbench {

// The CUDA device index of a resolved rank device ("cuda:i"), or -1 for "cpu".
inline int cudaDeviceIndex(const std::string& device) {
    return device.rfind("cuda:", 0) == 0 ? std::stoi(device.substr(5)) : -1;
}

// Makes `device` this thread's current device for the rest of its life (a rank thread, first
// thing). A CPU device changes nothing.
void selectThreadDevice(const c10::Device& device);

// `device` is the current device for the scope's lifetime, the previous one after (an
// allocation through an allocator that reads the current device).
class DeviceScope {
public:
    explicit DeviceScope(const c10::Device& device);
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

private:
    c10::OptionalDeviceGuard guard_;
};

// Tests: called with every device a selection or a scope asks for, from whichever thread asks;
// an empty function stops it. The device is still selected as without it.
enum class DeviceRequest { kThread, kScope };
void observeDeviceRequests(std::function<void(const c10::Device&, DeviceRequest)> observer);

}  // namespace trainbench
