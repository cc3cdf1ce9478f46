// Finding the checkpoint a resume continues from, without exposing tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainbench {

struct CheckpointInfo {
    std::string path;  // the checkpoint directory
    int64_t step = 0;  // optimizer steps it holds
};

// The newest checkpoint in `folder` whose checksums verify and whose step is at most
// `recorded_through`, the last step the run's store holds; the corrupt or incomplete ones met
// on the way are described in `skipped`. A process killed between writing a checkpoint and
// committing that step's points leaves the checkpoint ahead of the store: resuming from it
// would leave those steps without points for good, so an earlier one is taken. Only when every
// valid checkpoint is ahead is the earliest of them returned (the fewest steps lost).
std::optional<CheckpointInfo> checkpointToResume(const std::string& folder, std::vector<std::string>& skipped,
                                                 int64_t recorded_through = INT64_MAX);

// The checkpoint of optimizer step `step` in `folder` (0: the newest that verifies), its
// checksums verified. Throws ConfigError naming --step and listing the steps there.
CheckpointInfo checkpointOfStep(const std::string& folder, int64_t step);

}  // namespace trainbench

// Floor: train/ (engine/README.md)
