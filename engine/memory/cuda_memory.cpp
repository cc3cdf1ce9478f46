// CUDA memory statistics through c10's caching allocator and the CUDA runtime; NVML is opened
// with dlopen at first use, so machines without the driver library (or without a GPU) run on.
#include "memory/cuda_memory.h"

#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <mutex>

namespace trainbench {
namespace {

bool deviceExists(int device) {
    if (device < 0) return false;
    try {
        return device < static_cast<int>(c10::cuda::device_count());
    } catch (...) {
        return false;
    }
}

// The caching allocator sizes its per-device tables when CUDA is first initialised (the first
// CUDA tensor); until then its statistics and limits throw ("did you call init?"). A sampler
// that asks first reports nothing rather than initialising CUDA from its own thread.
bool allocatorReady() {
    auto* allocator = c10::cuda::CUDACachingAllocator::get();
    return allocator != nullptr && allocator->initialized();
}

// The few NVML entry points used, declared here so no NVML header is needed to build.
struct Nvml {
    using Handle = void*;
    struct Utilization {
        unsigned int gpu, memory;
    };
    struct Memory {
        unsigned long long total, free, used;
    };
    int (*init)() = nullptr;
    int (*handleByIndex)(unsigned int, Handle*) = nullptr;
    int (*utilization)(Handle, Utilization*) = nullptr;
    int (*memory)(Handle, Memory*) = nullptr;
    bool ready = false;
};

Nvml& nvml() {
    static Nvml library;
    static std::once_flag once;
    std::call_once(once, [] {
        void* handle = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!handle) return;
        library.init = reinterpret_cast<int (*)()>(dlsym(handle, "nvmlInit_v2"));
        library.handleByIndex =
            reinterpret_cast<int (*)(unsigned int, Nvml::Handle*)>(dlsym(handle, "nvmlDeviceGetHandleByIndex_v2"));
        library.utilization =
            reinterpret_cast<int (*)(Nvml::Handle, Nvml::Utilization*)>(dlsym(handle, "nvmlDeviceGetUtilizationRates"));
        library.memory = reinterpret_cast<int (*)(Nvml::Handle, Nvml::Memory*)>(dlsym(handle, "nvmlDeviceGetMemoryInfo"));
        library.ready = library.init && library.handleByIndex && library.utilization && library.memory &&
                        library.init() == 0;
    });
    return library;
}

}  // namespace

std::optional<CudaMemorySample> sampleCudaMemory(int device) {
    if (!deviceExists(device) || !allocatorReady()) return std::nullopt;
    CudaMemorySample sample;
    using c10::CachingAllocator::StatType;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
    const auto all = static_cast<size_t>(StatType::AGGREGATE);
    sample.allocated_bytes = stats.allocated_bytes[all].current;
    sample.reserved_bytes = stats.reserved_bytes[all].current;
    sample.peak_allocated_bytes = stats.allocated_bytes[all].peak;
    {
        c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
        size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
            sample.free_bytes = static_cast<int64_t>(free);
            sample.total_bytes = static_cast<int64_t>(total);
        }
    }
    Nvml& library = nvml();
    Nvml::Handle handle = nullptr;
    if (library.ready && library.handleByIndex(static_cast<unsigned int>(device), &handle) == 0) {
        Nvml::Utilization rates{};
        Nvml::Memory memory{};
        if (library.utilization(handle, &rates) == 0) sample.utilization_percent = static_cast<int>(rates.gpu);
        if (library.memory(handle, &memory) == 0) sample.device_used_bytes = static_cast<int64_t>(memory.used);
    }
    return sample;
}

int64_t cudaPeakAllocatedBytes(int device) {
    if (!deviceExists(device) || !allocatorReady()) return 0;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
}

void resetCudaPeak(int device) {
    if (deviceExists(device) && allocatorReady()) c10::cuda::CUDACachingAllocator::resetPeakStats(device);
}

int64_t cudaTotalBytes(int device) {
    if (!deviceExists(device)) return 0;
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    size_t free = 0, total = 0;
    return cudaMemGetInfo(&free, &total) == cudaSuccess ? static_cast<int64_t>(total) : 0;
}

void initializeCuda() { at::globalContext().lazyInitDevice(c10::DeviceType::CUDA); }

void limitCudaMemory(int device, int64_t limit_bytes) {
    const int64_t total = cudaTotalBytes(device);
    if (total <= 0 || limit_bytes <= 0) return;
    // The fraction is kept in the allocator's table of `device`, which exists once CUDA is
    // initialised; before the model's first tensor it does not yet.
    initializeCuda();
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));  // the call selects `device` itself
    const double fraction = std::min(1.0, double(limit_bytes) / double(total));
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(device));
}

}  // namespace trainbench
