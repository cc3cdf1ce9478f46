// Rendezvous: the c10d key-value stores through which ranks find each other.
#pragma once

#include <chrono>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "trainbench/process_launch.h"

namespace trainbench {

// For rank threads of one process: c10d's in-memory HashStore, shared by all of them.
c10::intrusive_ptr<c10d::Store> threadRendezvous();
// For ranks in separate processes: c10d's TCPStore, served by rank 0 at MASTER_ADDR:MASTER_PORT,
// the others connecting to it. Blocks until all `launch.world_size` ranks have joined or
// `timeout` passes (then throws CollectiveAborted naming the address).
c10::intrusive_ptr<c10d::Store> processRendezvous(const ProcessLaunch& launch, std::chrono::milliseconds timeout);

}  // namespace trainbench
