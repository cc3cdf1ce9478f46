// ProcessLaunch: this process's place among several started by a launcher (torchrun, Slurm).
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace trainbench {

struct ProcessLaunch {
    int rank = 0;              // global rank of this process
    int world_size = 1;        // processes in the run (each one rank)
    int local_rank = 0;        // rank on this node: the GPU it takes, cuda:local_rank
    int local_world_size = 1;  // processes on this node
    std::string master_addr;   // where rank 0's rendezvous store listens
    int master_port = 0;
    std::string launcher;      // "torchrun" or "slurm": which variables were read
    // torchrun's agent already serves a store at MASTER_ADDR:MASTER_PORT
    // (TORCHELASTIC_USE_AGENT_STORE=True): every rank is its client, rank 0 serves nothing.
    bool agent_store = false;
    // TORCHELASTIC_RESTART_COUNT: the agent's store outlives a restart of the workers, so each
    // attempt keeps its keys apart (a failed attempt's abort must not end the next).
    int restart_count = 0;
};

// Reads the launcher's variables: torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE, TORCHELASTIC_RESTART_COUNT, or Slurm's SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (with
// MASTER_ADDR and MASTER_PORT exported by the batch script). Returns nothing when this process
// is not one of several (no launcher, or a world of one). Throws ConfigError naming the
// variable when one is missing or malformed. `lookup` stands in for getenv in tests.
// `run --check-rendezvous`: this rank meets the others through the launch's rendezvous store
// (as a training run would, without a device) and they wait for each other to finish, so a
// launcher's set-up is proven in seconds. Returns this rank's one-line JSON report; throws
// (naming MASTER_ADDR:MASTER_PORT) when the others do not come within `timeout_s`.
std::string checkRendezvous(const ProcessLaunch& launch, double timeout_s);

std::optional<ProcessLaunch> processLaunchFromEnvironment(
    const std::function<const char*(const char*)>& lookup = [](const char* name) { return std::getenv(name); });

}  // namespace trainbench

// Floor: comm/ (engine/README.md)
