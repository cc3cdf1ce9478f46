// NcclCollectives: the collectives of CUDA ranks, through c10d's ProcessGroupNCCL.
#pragma once

#include <chrono>
#include <memory>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "parallel/collectives.h"

namespace trainbench {

// Throws ConfigError (runtime.device) unless this build carries ProcessGroupNCCL, which it does
// when CMake found the torch wheel's nccl.h.
void requireNcclBuiltIn();

// Rank `rank` of `world_size` on cuda:`device_index`, meeting the others through `store`.
// A collective that does not complete within `timeout` throws CollectiveAborted on the ranks
// waiting for it (blocking wait: the process is never torn down by NCCL's watchdog).
std::unique_ptr<Collectives> makeNcclCollectives(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                                 int device_index, std::chrono::milliseconds timeout);

}  // namespace trainbench
