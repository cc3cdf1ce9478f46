// NcclCollectives: the collectives of CUDA ranks, through c10d's ProcessGroupNCCL.
#pragma once

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/collectives.h"

namespace trainbench {

// Whether this build carries ProcessGroupNCCL (CMake found the torch wheel's nccl.h).
bool ncclBuiltIn();
// Throws ConfigError (runtime.device) unless this build carries ProcessGroupNCCL, which it does
// when CMake found the torch wheel's nccl.h.
void requireNcclBuiltIn();

// What ProcessGroupNCCL is told through the environment, by name and value: stream-ordered waits,
// and a watchdog that aborts a failed or timed-out collective's communicators without ending
// the process (the rank's next wait then throws CollectiveAborted).
std::vector<std::pair<const char*, const char*>> ncclEnvironment();
// Sets ncclEnvironment() where the user has not set the variable (theirs is kept). Call before
// any rank thread starts: setenv races with getenv.
void prepareNcclEnvironment();

// Rank `rank` of `world_size` on cuda:`device_index`, meeting the others through `store`.
// A collective that does not complete within `timeout` is aborted by NCCL's watchdog; the ranks'
// next wait throws CollectiveAborted (see prepareNcclEnvironment). abort() ends this rank's communicator; the
// session aborts every rank thread's, and the store signal reaches other processes.
// `across_processes`: the ranks are separate processes; an abort is then also raised in the
// store (RendezvousAbortSignal), so the other processes' ranks are released at once.
// `on_remote_abort` (across processes) hears another process's abort first.
std::unique_ptr<Collectives> makeNcclCollectives(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                                 int device_index, std::chrono::milliseconds timeout,
                                                 bool across_processes, RemoteAbortHandler on_remote_abort = {});

}  // namespace trainbench
