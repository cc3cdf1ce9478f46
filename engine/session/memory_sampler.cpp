// Memory samples: per rank, mem/<device>/<what> points.
#include "session/memory_sampler.h"

#include <exception>

#include "memory/device_selection.h"
#include "trainbench/metric_keys.h"

namespace trainbench {

MemorySample sampleRanksMemory(const std::vector<SampledRank>& ranks, int64_t step, int64_t tokens, double wall,
                               const CudaMemoryProbe& probe) {
    MemorySample sample;
    for (const SampledRank& r : ranks) {
        auto add = [&](const char* what, double value) {
            sample.points.push_back(MetricPoint{step, tokens, wall, metric::memoryKey(r.device, r.rank, what), value});
        };
        if (r.account) add(metric::kAllocatedBytes, double(r.account->current.load()));
        if (r.host_account) add(metric::kHostBytes, double(r.host_account->current.load()));
        const int device = cudaDeviceIndex(r.device);
        if (device < 0 || !probe) continue;
        std::optional<CudaMemorySample> cuda;
        try {
            cuda = probe(device);
        } catch (const std::exception& e) {
            if (sample.error.empty()) sample.error = r.device + ": " + e.what();
            continue;
        } catch (...) {
            if (sample.error.empty()) sample.error = r.device + ": an unknown error";
            continue;
        }
        if (!cuda) continue;
        add(metric::kAllocatedBytes, double(cuda->allocated_bytes));
        add(metric::kReservedBytes, double(cuda->reserved_bytes));
        add(metric::kFreeBytes, double(cuda->free_bytes));
        if (cuda->device_used_bytes >= 0) add(metric::kDeviceUsedBytes, double(cuda->device_used_bytes));
        if (cuda->utilization_percent >= 0) add(metric::kUtilizationPercent, cuda->utilization_percent);
    }
    return sample;
}

}  // namespace trainbench
