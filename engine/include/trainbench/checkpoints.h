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

// The newest checkpoint in `folder` whose checksums verify; the corrupt or incomplete ones
// met on the way are described in `skipped`.
std::optional<CheckpointInfo> checkpointToResume(const std::string& folder, std::vector<std::string>& skipped);

// The checkpoint of optimizer step `step` in `folder` (0: the newest that verifies), its
// checksums verified. Throws ConfigError naming --step and listing the steps there.
CheckpointInfo checkpointOfStep(const std::string& folder, int64_t step);

}  // namespace trainbench
