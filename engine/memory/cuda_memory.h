// CUDA memory: the caching allocator's statistics, the device's free and total bytes, a budget
// as a per-process memory fraction, and NVML's view of the device when the library is there.
#pragma once

#include <cstdint>
#include <optional>

namespace trainbench {

struct CudaMemorySample {
    int64_t allocated_bytes = 0;       // held by live tensors
    int64_t reserved_bytes = 0;        // held by the caching allocator (allocated + cached)
    int64_t peak_allocated_bytes = 0;  // since the last resetCudaPeak()
    int64_t free_bytes = 0;            // cudaMemGetInfo: free on the device, all processes
    int64_t total_bytes = 0;
    // NVML (absent: -1): device memory used by every process, and GPU utilisation in percent.
    int64_t device_used_bytes = -1;
    int utilization_percent = -1;
};

// Empty when CUDA is unavailable or `device` does not exist.
std::optional<CudaMemorySample> sampleCudaMemory(int device);
void resetCudaPeak(int device);
// Only the caching allocator's peak since resetCudaPeak(): what the rank loop needs each window,
// without the device and NVML queries of a full sample. 0 without the device.
int64_t cudaPeakAllocatedBytes(int device);
// Caps this process's caching allocator on `device` at `limit_bytes` (a fraction of the total),
// so exceeding it raises c10's OutOfMemoryError as a real exhaustion would.
void limitCudaMemory(int device, int64_t limit_bytes);
// Initialises CUDA in this process (the caching allocator's per-device tables among it) without
// allocating: call it on one thread before others read the allocator (the memory sampler),
// whose tables are filled without a lock on first use.
void initializeCuda();
// Total bytes of `device`, 0 when unknown.
int64_t cudaTotalBytes(int device);

}  // namespace trainbench
