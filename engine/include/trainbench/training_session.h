// TrainingSession: owns the rank threads of one run and its control (start, pause, stop).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "trainbench/live_advice.h"
#include "trainbench/metric_bus.h"
#include "trainbench/process_launch.h"
#include "trainbench/run_config.h"
#include "trainbench/run_status.h"

namespace trainbench {

// What a finished (or stopped) run reports: the CLI's summary JSON line.
struct RunSummary {
    std::string run_id;
    RunStatus status = RunStatus::Created;
    int64_t steps = 0;
    int64_t tokens = 0;
    double final_loss = 0;  // NaN before the first step
    int64_t micro_batch_size = 0;
    int64_t gradient_accumulation_steps = 0;
    int64_t world_size = 0;
    int64_t global_batch_size = 0;
    int64_t peak_memory_bytes = 0;
    // runtime.offload optimizer: the most any rank held in host memory (its moments); 0 without.
    int64_t host_peak_bytes = 0;
    double tokens_per_s = 0;
    double wall_time_s = 0;
    bool out_of_memory = false;  // failed because a rank ran out of memory
    std::string error;  // the reason when status == Failed
};
std::string runSummaryToJson(const RunSummary& summary);

// A fresh random run id (12 hex digits).
std::string generateRunId();

// Where a session keeps and finds checkpoints. Both empty: no checkpoints.
struct SessionOptions {
    std::string run_id;           // empty: a new random id
    std::string checkpoint_dir;   // train.checkpoint_every steps, and at the end, land here
    std::string resume_from;      // a checkpoint directory to continue from (same config)
    // Out of memory inside a window: halve the micro-batch and redo the step (true), or end
    // the run as failed with RunSummary::out_of_memory set (false; the explorer measures so).
    bool recover_out_of_memory = true;
    // The explorer's fastest split for this config, if measured: the run then says so when it
    // trains far slower (live advice).
    std::optional<ExploredBest> explored_best;
    // Set when a launcher started this process as one rank of several: the session runs that
    // rank alone, on cuda:local_rank, meeting the others through a TCPStore and NCCL.
    std::optional<ProcessLaunch> launch;
};

// Thread contract: every method is called from one controlling thread (the GUI or CLI main
// thread); rank threads report only through the bus and atomics. The destructor stops and
// joins every thread it started.
class TrainingSession {
public:
    // Validates the config; throws ConfigError when it is invalid. Allocates nothing big.
    explicit TrainingSession(RunConfig config, SessionOptions options = {});
    ~TrainingSession();
    TrainingSession(const TrainingSession&) = delete;
    TrainingSession& operator=(const TrainingSession&) = delete;

    const RunConfig& config() const;
    MetricBus& bus();

    void start();
    void pause();   // takes effect at the next micro-batch boundary
    void resume();
    void stop();    // asks the ranks to stop at the next micro-batch boundary; does not block
    // Blocks until the run has ended (or the timeout passes); returns true when it ended.
    bool wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

    RunStatus status() const;
    int64_t completedSteps() const;
    // True when the ranks train on the host's CPU: torch's intra-op pools then keep every core
    // busy, and whatever else the process does (drawing curves) is taken from the run.
    bool trainsOnCpu() const;
    // When start() began: every point's wall_time counts from here (how late a point reaches
    // a screen is measured against it).
    std::chrono::steady_clock::time_point startedAt() const;
    RunSummary summary() const;
    // Number of threads this session has started and not yet joined (for tests).
    int liveThreads() const;
    // The exceptions to the thread contract, callable from any thread (the store writer's):
    // hold the ranks at their next micro-batch boundary while the run store cannot be written
    // (an event says why; the user's resume does not lift it), release them, or end the run as
    // failed with `reason`.
    void holdForStore(const std::string& reason);
    void releaseStoreHold();
    void abortRun(const std::string& reason);

    // Fault injection for tests: rank `rank` throws when it reaches optimizer step `step`
    // (0-based). Call before start().
    void injectRankFailure(int rank, int64_t step);
    // Fault injection for tests: rank `rank` stalls at optimizer step `step` (0-based) until
    // the run is stopped, as a hung device would. Call before start().
    void injectRankStall(int rank, int64_t step);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench

// Floor: session/ (engine/README.md)
