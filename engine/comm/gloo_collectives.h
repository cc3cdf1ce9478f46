// GlooCollectives: the collectives of CPU ranks that are processes, through c10d's ProcessGroupGloo.
#pragma once

#include <chrono>
#include <memory>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/collectives.h"

namespace trainbench {

// Where a rank's Gloo connections listen.
enum class GlooNetwork {
    // Every rank is on this machine: the loopback address.
    Loopback,
    // Ranks on several machines: the interface GLOO_SOCKET_IFNAME names (as torch's Python
    // front end reads it), else the address this machine's hostname resolves to.
    Hostname,
};

// Rank `rank` of `world_size` meeting the others through `store` (its keys under whatever
// prefix the store carries: each group its own). A collective that does not complete within
// `timeout` fails on the ranks waiting for it. Gloo cannot abort a collective in flight, so
// abort() releases this rank's waits at once and, when `across_processes`, raises the abort in
// the store (RendezvousAbortSignal) so that the other processes' ranks are released as well.
// A collective that fails (a peer's connection closed, or the timeout) names the ranks that
// did not answer the roll call that follows (RollCall), so the message says which rank was lost.
// `on_remote_abort` (across processes) hears another process's abort first.
std::unique_ptr<Collectives> makeGlooCollectives(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                                 std::chrono::milliseconds timeout, bool across_processes,
                                                 GlooNetwork network, RemoteAbortHandler on_remote_abort = {});

}  // namespace trainbench
