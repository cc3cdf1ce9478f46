// Launch lines: the processes that run a config's ranks, written out for the user to copy.
#include "trainbench/launch_lines.h"

#include "trainbench/device_type.h"

namespace trainbench {

namespace {

// A word as a POSIX shell reads it back: bare when it is safe, else in single quotes.
std::string shellWord(const std::string& word) {
    if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/=:,+@") ==
                             std::string::npos)
        return word;
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

}  // namespace

LaunchLines launchLines(const RunConfig& config, const std::string& config_path, const std::vector<std::string>& overrides) {
    LaunchLines lines;
    const int64_t W = config.runtime.world_size;
    const bool gpu = deviceTypeOf(config.runtime) == DeviceType::Cuda;
    if (W <= 1) {
        lines.ranks = "one rank";
        return lines;
    }
    // What `run` and the GUI's Start do; a launcher makes each rank a process of its own.
    lines.ranks = std::to_string(W) + " rank threads of one process on " + (gpu ? "its GPUs" : "the CPU") +
                  " (run, Start)";
    std::string run = "trainbench-cli run " + shellWord(config_path);
    for (const std::string& assignment : overrides) run += " --set " + shellWord(assignment);
    const std::string command = "--no-python " + run;
    lines.torchrun = "torchrun --nproc-per-node " + std::to_string(W) + " " + command;
    if (W % 2 == 0 && W >= 4)
        lines.torchrun_two_nodes = "torchrun --nnodes 2 --node-rank <0 or 1> --nproc-per-node " + std::to_string(W / 2) +
                                   " --master-addr <first node> --master-port 29500 " + command;
    // srun starts the tasks; the ranks meet at the first node of the allocation.
    lines.srun = "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1) MASTER_PORT=29500\n"
                 "srun --ntasks " + std::to_string(W) + (gpu ? " --gpus-per-task 1" : "") +
                 " " + run;
    return lines;
}

}  // namespace trainbench
