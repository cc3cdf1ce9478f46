// LaunchLines: how a config's ranks run, and the command lines that start them as processes.
#pragma once

#include <string>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

struct LaunchLines {
    // How `run` (or the GUI's Start) runs the ranks: "one rank", "2 rank threads of one process".
    std::string ranks;
    // One process per rank on this machine: torchrun's line.
    std::string torchrun;
    // The same over two machines (each runs it with its --node-rank); empty when the ranks do
    // not split evenly in two.
    std::string torchrun_two_nodes;
    // A Slurm batch script's lines: the rendezvous address exported, then srun.
    std::string srun;
};

// For `config` read from `config_path` with `overrides` (--set's assignments, repeated in the
// lines), world_size > 1 (else only `ranks` is set). The lines name the config file as given,
// and `trainbench-cli` as on the PATH.
LaunchLines launchLines(const RunConfig& config, const std::string& config_path,
                        const std::vector<std::string>& overrides = {});

}  // namespace trainbench

// Floor: plan/ (engine/README.md)
