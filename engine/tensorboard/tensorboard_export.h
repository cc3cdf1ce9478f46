// A stored run written out as one TensorBoard event file (`export --format tensorboard`).
#pragma once

#include <string>

#include "tensorboard/event_file_writer.h"  // EventFileError
#include "trainbench/run_store.h"

namespace trainbench::tensorboard {

// Writes every metric point of `run_id` (those `export --format jsonl` prints), its config and
// its events into a new event file in `out_dir` (created if missing) and returns the file's path.
// The file appears whole or not at all: it is written under a name TensorBoard ignores and
// renamed at the end. Throws EventFileError naming the folder or file when it cannot be written.
std::string exportRunToTensorBoard(RunStore& store, const std::string& run_id, const std::string& out_dir);

}  // namespace trainbench::tensorboard
