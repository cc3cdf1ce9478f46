// The bytes a rank may plan for on its device: the budget, the GPU, or the host's share.
#include <torch/cuda.h>

#include "memory/cuda_memory.h"
#include "memory/device_selection.h"
#include "trainbench/memory_plan.h"

namespace trainbench {

int64_t deviceMemoryBytesPerRank(const RunConfig& config) {
    if (config.runtime.memory_limit_mb > 0) return config.runtime.memory_limit_mb * 1024 * 1024;
    const std::string& device = config.runtime.device;
    const bool wants_gpu = device.rfind("cuda", 0) == 0 || (device == "auto" && torch::cuda::is_available());
    if (wants_gpu) {
        // "cuda:2,3" plans against its first device; ranks on one machine have equal GPUs.
        int index = 0;
        if (auto colon = device.find(':'); colon != std::string::npos) index = std::stoi(device.substr(colon + 1));
        return cudaTotalBytes(index);
    }
    return hostMemoryBytesPerRank(config);
}

int64_t deviceMemoryBytesPerRank(const RunConfig& config, const std::string& rank_device) {
    if (config.runtime.memory_limit_mb > 0) return config.runtime.memory_limit_mb * 1024 * 1024;
    // The rank's own GPU: asking another (a launched process's cuda:0) opens a context there.
    const int index = cudaDeviceIndex(rank_device);
    return index >= 0 ? cudaTotalBytes(index) : hostMemoryBytesPerRank(config);
}

}  // namespace trainbench
