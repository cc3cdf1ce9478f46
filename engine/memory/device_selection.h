// Which GPU a thread works on. c10's caching allocator, the current stream and NCCL's
// communicator all take the thread's *current* CUDA device, not a tensor's: a rank thread on
// cuda:1 that never selects it allocates raw storage (ZeRO-3's gathered units), and makes its
// streams, on cuda:0.
#pragma once

#include <functional>

#include <c10/core/Device.h>
#include <c10/core/DeviceGuard.h>

namespace trainbench {

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
