// One memory sample of every rank a session runs: the CPU account's bytes, or the CUDA
// allocator's and the device's view. Taken twice a second on the session's sampler thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "memory/cuda_memory.h"
#include "memory/memory_account.h"
#include "trainbench/metric_point.h"

namespace trainbench {

// What one rank's memory is read from: its device ("cpu" or "cuda:i"), its rank (the key's name
// for CPU ranks) and, on the CPU, its tracking account.
struct SampledRank {
    std::string device;
    int rank = 0;
    MemoryAccount* account = nullptr;
    MemoryAccount* host_account = nullptr;  // runtime.offload optimizer: the rank's host tier
};

// Reads a CUDA device's memory; sampleCudaMemory in a session, another reader in tests.
using CudaMemoryProbe = std::function<std::optional<CudaMemorySample>(int device)>;

struct MemorySample {
    std::vector<MetricPoint> points;
    // The first failure of the probe in this sample ("cuda:0: ..."), empty when none: the ranks
    // it failed for have no points this time; the others still do.
    std::string error;
};

// The points of one sample at (step, tokens, wall). Never throws for a probe that does: a
// sampler is a thread of its own, where an escaping exception would end the process.
MemorySample sampleRanksMemory(const std::vector<SampledRank>& ranks, int64_t step, int64_t tokens, double wall,
                               const CudaMemoryProbe& probe);

}  // namespace trainbench
