// The bytes a rank may plan for on its device: the budget, the GPU, or the host's share.
#include <unistd.h>

#include <algorithm>

#include "memory/cuda_memory.h"
#include "trainbench/device_type.h"
#include "memory/device_selection.h"
#include "trainbench/device_budget.h"

namespace trainbench {

int64_t hostMemoryBytesPerRank(const RunConfig& config) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0;
    return int64_t(pages) * int64_t(page) / std::max<int64_t>(1, config.runtime.world_size);
}

int64_t deviceMemoryBytesPerRank(const RunConfig& config) {
    // The config's own device, unresolved: "cuda:2,3" plans against its first GPU (ranks on one
    // machine have equal GPUs), "cuda" and "auto" with a GPU against cuda:0.
    if (deviceTypeOf(config.runtime) == DeviceType::Cpu) return deviceMemoryBytesPerRank(config, "cpu");
    const std::string& device = config.runtime.device;
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
