// The memory a rank may plan for on its device: the budget the config sets, the GPU's, or the
// host's share. Torch-free.
#pragma once

#include <cstdint>
#include <string>

#include "trainbench/run_config.h"

namespace trainbench {

// The physical memory a rank may use on its device: the host's RAM shared by the CPU ranks,
// or the GPU's memory. 0 when unknown. (Torch-free; CUDA sizes come from the session.)
int64_t hostMemoryBytesPerRank(const RunConfig& config);

// What a rank of this config may use: runtime.memory_limit_mb when set, else the first GPU's
// total bytes for a CUDA device (or "auto" with one visible), else the host's share. 0: unknown.
int64_t deviceMemoryBytesPerRank(const RunConfig& config);
// The same for a rank whose device is resolved ("cpu" or "cuda:i"): that GPU's total bytes.
int64_t deviceMemoryBytesPerRank(const RunConfig& config, const std::string& rank_device);

}  // namespace trainbench

// Floor: memory/ (engine/README.md)
