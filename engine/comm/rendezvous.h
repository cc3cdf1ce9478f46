// Rendezvous: the c10d key-value stores through which ranks find each other.
#pragma once

#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "trainbench/process_launch.h"

namespace trainbench {

// For rank threads of one process: c10d's in-memory HashStore, shared by all of them.
c10::intrusive_ptr<c10d::Store> threadRendezvous();
// For ranks in separate processes: c10d's TCPStore at MASTER_ADDR:MASTER_PORT, served by
// torchrun's agent when it says so (every rank a client), else by rank 0 (which must then
// outlive the others' use of it). The keys live under rendezvousPrefix(launch). Blocks until all
// `launch.world_size` ranks have joined or `timeout` passes (then throws CollectiveAborted
// naming the address and who serves it).
c10::intrusive_ptr<c10d::Store> processRendezvous(const ProcessLaunch& launch, std::chrono::milliseconds timeout);
// "trainbench/attempt_<TORCHELASTIC_RESTART_COUNT>".
std::string rendezvousPrefix(const ProcessLaunch& launch);

}  // namespace trainbench
