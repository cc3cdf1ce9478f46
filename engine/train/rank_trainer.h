// RankTrainer: one rank's training loop (accumulation window, normalisation, AdamW, schedule).
#pragma once

#include <chrono>
#include <string>

#include "session/run_control.h"
#include "trainbench/metric_bus.h"
#include "trainbench/run_config.h"
#include "trainbench/training_session.h"

namespace trainbench {

// What a rank reports when its loop ends.
struct RankResult {
    RunStatus status = RunStatus::Created;
    int64_t steps = 0;
    int64_t tokens = 0;
    double final_loss = 0;
    double tokens_per_s = 0;
    int64_t peak_memory_bytes = 0;
    std::string error;
};

struct RankSetup {
    const RunConfig* config = nullptr;
    int rank = 0;
    int world_size = 1;
    std::string device = "cpu";  // resolved: cpu | cuda:i
    RunControl* control = nullptr;
    MetricBus* bus = nullptr;       // rank 0 publishes
    std::chrono::steady_clock::time_point started;
    std::atomic<int64_t>* completed_steps = nullptr;
};

// Runs the loop to the end; never throws: an exception becomes status Failed with the reason.
RankResult runRank(const RankSetup& setup);

}  // namespace trainbench
