// What TensorBoard shows of a run, under which tags: every metric point as a scalar under its
// own key (train/loss), the config as text (config), each event as text (events/<kind>, the
// samples under samples). The live recorder and the export write through these, so a run's
// file reads the same either way.
#pragma once

#include <string>

#include "tensorboard/event_file_writer.h"
#include "trainbench/metric_point.h"

namespace trainbench::tensorboard {

// A point's and an event's wall_time count seconds from the run's start; TensorBoard's count
// from the Unix epoch. `run_start` is the run's `created` time in the store (whole seconds).
double runStartUnixTime(const std::string& created_utc);  // "2025-01-02T03:04:05Z"; 0 if unreadable

// Non-finite values are written as they are (TensorBoard draws NaN and infinities as such).
void writePoint(EventFileWriter& file, const MetricPoint& point, double run_start);
void writeEvent(EventFileWriter& file, const RunEvent& event, double run_start);
// The config JSON, indented, as a Markdown code block at step 0.
void writeConfig(EventFileWriter& file, const std::string& config_json, double run_start);

}  // namespace trainbench::tensorboard
