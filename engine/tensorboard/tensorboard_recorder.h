// TensorBoardRecorder: a run's event file written live (runtime.tensorboard_dir), beside the store.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "trainbench/metric_bus.h"

namespace trainbench::tensorboard {

class EventFileWriter;

// Its own thread drains a bus subscription into <tensorboard_dir>/<run id>/events.out.tfevents...
// (one folder per run, so runs show side by side), and flushes when 2 s have passed since the
// last flush and at the end: the training loop never waits on this disk. A file that cannot be
// written later costs only the file: the run goes on (the store keeps every point), and one
// warning event says so. Only the process that writes the store (global rank 0) makes one.
class TensorBoardRecorder {
public:
    // Creates the run's folder and its file. Throws ConfigError naming runtime.tensorboard_dir
    // when they cannot be made: call before the run is registered anywhere.
    TensorBoardRecorder(const std::string& tensorboard_dir, const std::string& run_id,
                        std::chrono::milliseconds flush_period = std::chrono::seconds(2));
    ~TensorBoardRecorder();  // stop()
    // Writes the session's start and the config at step 0, subscribes to `bus` and starts the
    // thread: call before the session starts, so no point is published unseen. `run_start`: the
    // run's creation time in seconds since the Unix epoch (see runStartUnixTime), which the
    // points' wall times count from. A run resumed from a checkpoint at `resumed_from_step`
    // starts its session at the step after: the run's earlier files may hold steps from there on
    // (a killed process's), which the store dropped and TensorBoard then drops too.
    void start(MetricBus& bus, const std::string& config_json, double run_start,
               std::optional<int64_t> resumed_from_step = std::nullopt);
    // After the bus has closed: writes what is left, flushes and closes; also on a failed run.
    void stop();
    std::string path() const { return path_; }

private:
    void loop(double run_start);
    std::string path_;
    std::chrono::milliseconds flush_period_;
    std::unique_ptr<EventFileWriter> file_;
    MetricBus* bus_ = nullptr;
    std::shared_ptr<BusSubscription> inbox_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace trainbench::tensorboard
