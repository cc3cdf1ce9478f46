// LaunchAgreement: every process of a launch trains the same thing, or none starts.
#pragma once

#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "trainbench/process_launch.h"
#include "trainbench/run_config.h"

namespace trainbench {

// What a rank brings to the rendezvous: its config (every field, as JSON), a fingerprint of
// the program it runs, and of each data file it reads. One line of JSON.
std::string launchIdentity(const RunConfig& config);

// Each rank leaves launchIdentity(config) in the store and reads every other rank's. Where any
// rank's differs from rank 0's, every rank throws the same ConfigError, naming the rank and
// what differs (config fields with both values, the program, a data file), before any
// process group is made: a rank started with another config, seed, data or build is refused
// on all ranks alike. Waits for the others up to `timeout` (CollectiveAborted after).
void requireSameLaunch(c10d::Store& store, const ProcessLaunch& launch, const std::string& identity,
                       std::chrono::milliseconds timeout);

}  // namespace trainbench
