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

// Sets what ProcessGroupNCCL reads from the environment (blocking wait, so a failed or timed-out
// collective throws in the waiting rank instead of NCCL's watchdog ending the process; a user's
// own setting is kept). Call before any rank thread starts: setenv races with getenv.
void prepareNcclEnvironment();

// Rank `rank` of `world_size` on cuda:`device_index`, meeting the others through `store`.
// A collective that does not complete within `timeout` throws CollectiveAborted on the ranks
// waiting for it (see prepareNcclEnvironment). abort() ends this rank's communicator; the
// session aborts every rank thread's, and the store signal reaches other processes.
// `across_processes`: the ranks are separate processes; an abort is then also raised in the
// store (StoreAbortSignal), so the other processes' ranks are released at once.
std::unique_ptr<Collectives> makeNcclCollectives(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                                 int device_index, std::chrono::milliseconds timeout,
                                                 bool across_processes);

}  // namespace trainbench
