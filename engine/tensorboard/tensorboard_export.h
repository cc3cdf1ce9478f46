// A stored run written out as one TensorBoard event file (`export --format tensorboard`).
#pragma once

#include <string>
#include <vector>

#include "tensorboard/event_file_writer.h"  // EventFileError
#include "trainbench/metric_point.h"

namespace trainbench::tensorboard {

// A stored run's records, as the store hands them out.
struct StoredRun {
    std::string created;      // the store's creation time (UTC, "YYYY-MM-DD HH:MM:SS")
    std::string config_json;
    std::vector<MetricPoint> points;  // ordered by step
    std::vector<RunEvent> events;     // in the order they happened
};

// Writes every metric point of a run (those `export --format jsonl` prints), its config and its
// events into a new event file in `out_dir` (created if missing) and returns the file's path.
// The file appears whole or not at all: it is written under a name TensorBoard ignores and
// renamed at the end. Throws EventFileError naming the folder or file when it cannot be written.
std::string exportRunToTensorBoard(const StoredRun& run, const std::string& out_dir);

}  // namespace trainbench::tensorboard
