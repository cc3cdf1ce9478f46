// Rendezvous stores: HashStore for threads, TCPStore (rank 0 serves) for processes.
#include "parallel/rendezvous.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "parallel/collectives.h"

namespace trainbench {

c10::intrusive_ptr<c10d::Store> threadRendezvous() { return c10::make_intrusive<c10d::HashStore>(); }

c10::intrusive_ptr<c10d::Store> processRendezvous(const ProcessLaunch& launch, std::chrono::milliseconds timeout) {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(launch.master_port);
    options.isServer = launch.rank == 0;
    options.numWorkers = static_cast<std::size_t>(launch.world_size);
    options.waitWorkers = true;
    options.timeout = timeout;
    try {
        return c10::make_intrusive<c10d::TCPStore>(launch.master_addr, options);
    } catch (const std::exception& e) {
        throw CollectiveAborted("rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.world_size) +
                                " could not meet the others at " + launch.master_addr + ":" +
                                std::to_string(launch.master_port) + " (MASTER_ADDR:MASTER_PORT): " + e.what());
    }
}

}  // namespace trainbench
