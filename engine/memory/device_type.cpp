#include "trainbench/device_type.h"

#include <torch/cuda.h>

namespace trainbench {

DeviceType deviceTypeOf(const RuntimeConfig& runtime) {
    const std::string& device = runtime.device;
    if (device.rfind("cuda", 0) == 0) return DeviceType::Cuda;
    if (device == "auto" && torch::cuda::is_available()) return DeviceType::Cuda;
    return DeviceType::Cpu;
}

}  // namespace trainbench
