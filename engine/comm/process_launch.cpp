// Launcher variables: torchrun's names first, Slurm's when torchrun's are absent.
#include "trainbench/process_launch.h"

#include <cstdlib>

#include "trainbench/config_io.h"

namespace trainbench {
namespace {

// A whole non-negative number, or ConfigError naming the variable.
int integerVariable(const char* name, const char* value, int at_least) {
    const std::string text = value ? value : "";
    char* end = nullptr;
    const long parsed = text.empty() ? -1 : std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || parsed < at_least || parsed > 1 << 20)
        throw ConfigError(name, std::string(name) + "=\"" + text + "\": the launcher must set a whole number >= " +
                                    std::to_string(at_least));
    return static_cast<int>(parsed);
}

}  // namespace

std::optional<ProcessLaunch> processLaunchFromEnvironment(const std::function<const char*(const char*)>& lookup) {
    const bool torchrun = lookup("WORLD_SIZE") != nullptr;
    const bool slurm = !torchrun && lookup("SLURM_NTASKS") != nullptr;
    if (!torchrun && !slurm) return std::nullopt;
    const char* world_name = torchrun ? "WORLD_SIZE" : "SLURM_NTASKS";
    ProcessLaunch launch;
    launch.launcher = torchrun ? "torchrun" : "slurm";
    launch.world_size = integerVariable(world_name, lookup(world_name), 1);
    if (launch.world_size == 1) return std::nullopt;
    const char* rank_name = torchrun ? "RANK" : "SLURM_PROCID";
    const char* local_name = torchrun ? "LOCAL_RANK" : "SLURM_LOCALID";
    launch.rank = integerVariable(rank_name, lookup(rank_name), 0);
    if (launch.rank >= launch.world_size)
        throw ConfigError(rank_name, std::string(rank_name) + "=" + std::to_string(launch.rank) + " is not below " +
                                         world_name + "=" + std::to_string(launch.world_size));
    launch.local_rank = lookup(local_name) ? integerVariable(local_name, lookup(local_name), 0) : 0;
    // Slurm has no plain count of tasks on this node (SLURM_TASKS_PER_NODE reads "4(x2)"); it is
    // only reported, so a missing one is not an error.
    if (const char* local_world = lookup(torchrun ? "LOCAL_WORLD_SIZE" : "SLURM_NTASKS_PER_NODE"))
        launch.local_world_size = std::max(1, std::atoi(local_world));
    const char* addr = lookup("MASTER_ADDR");
    if (!addr || !*addr)
        throw ConfigError("MASTER_ADDR", std::string("MASTER_ADDR is not set: ") +
                                             (torchrun ? "torchrun sets it; start this process through torchrun"
                                                       : "export MASTER_ADDR=$(scontrol show hostnames "
                                                         "\"$SLURM_JOB_NODELIST\" | head -n1) in the batch script") +
                                             " so that every rank finds rank 0's rendezvous store");
    launch.master_addr = addr;
    if (!lookup("MASTER_PORT"))
        throw ConfigError("MASTER_PORT", "MASTER_PORT is not set: export a free TCP port (e.g. 29500), the same on "
                                         "every rank, for rank 0's rendezvous store");
    launch.master_port = integerVariable("MASTER_PORT", lookup("MASTER_PORT"), 1);
    if (torchrun) {
        const char* agent = lookup("TORCHELASTIC_USE_AGENT_STORE");
        launch.agent_store = agent && std::string(agent) == "True";  // Python's str(True), as torch compares
        if (const char* restarts = lookup("TORCHELASTIC_RESTART_COUNT"))
            launch.restart_count = integerVariable("TORCHELASTIC_RESTART_COUNT", restarts, 0);
    }
    if (launch.master_port > 65535)
        throw ConfigError("MASTER_PORT", "MASTER_PORT=" + std::to_string(launch.master_port) + " is not a TCP port (1-65535)");
    return launch;
}

}  // namespace trainbench
