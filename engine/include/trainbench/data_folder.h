// The folder Trainbench keeps its files in on this machine: the run store, the token cache.
#pragma once

#include <string>

namespace trainbench {

// $TRAINBENCH_STORE, else $XDG_DATA_HOME/trainbench, else ~/.local/share/trainbench.
std::string dataFolder();

}  // namespace trainbench

// Floor: files/ (engine/README.md)
