// The bytes a rank may plan for on its device: the budget, the GPU, or the host's share.
#include <torch/cuda.h>

#include "memory/cuda_memory.h"
#include "memory/device_selection.h"
#include "trainbench/memory_plan.h"

namespace trainbench {

int64_t deviceMemoryBytesPerRank(const RunConfig& config) {
    // The config's own device, unresolved: "cuda:2,3" plans against its first GPU (ranks on one
    // machine have equal GPUs), "cuda" and "auto" with a GPU against cuda:0.
    const std::string& device = config.runtime.device;
    if (device.rfind("cuda", 0) != 0 && !(device == "auto" && torch::cuda::is_available()))
        return deviceMemoryBytesPerRank(config, "cpu");
    const auto colon = device.find(':');
    return deviceMemoryBytesPerRank(config, "cuda:" + (colon == std::string::npos ? "0" : device.substr(colon + 1)));
}

int64_t deviceMemoryBytesPerRank(const RunConfig& config, const std::string& rank_device) {
    if (config.runtime.memory_limit_mb > 0) return config.runtime.memory_limit_mb * 1024 * 1024;
    // The rank's own GPU: asking another (a launched process's cuda:0) opens a context there.
    const int index = cudaDeviceIndex(rank_device);
    return index >= 0 ? cudaTotalBytes(index) : hostMemoryBytesPerRank(config);
}

}  // namespace trainbench
