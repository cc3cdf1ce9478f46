// Checkpoints: model, optimizer and trainer state in one directory, written atomically, checksummed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/safetensors.h"
#include "model/transformer.h"
#include "parallel/adamw_state.h"
#include "train/trainer_state.h"

namespace trainbench {

struct Checkpoint {
    std::string path;  // the checkpoint directory
    NamedTensors model;
    NamedTensors optimizer;
    TrainerState state;
};

// `folder`/step-00000012: model.safetensors (reference names, fp32), optimizer.safetensors
// (AdamW moments and step counts under the parameter names; the moments in their storage dtype,
// fp32 or bf16 per runtime.optimizer_dtype, converted on resume), trainer.json (state and the
// SHA-256 of both files) and trainer.json.sha256. Written into a `.partial` directory, each
// file fsynced, then renamed. Returns the final directory.
std::string writeCheckpoint(const std::string& folder, Transformer& model, const NamedTensors& optimizer_state,
                            const TrainerState& state);
// The same with the model's state given under stateDict's names (in any order: the file is keyed
// by name): sharded weights gathered.
std::string writeCheckpoint(const std::string& folder, const NamedTensors& model_state, const NamedTensors& optimizer_state,
                            const TrainerState& state);

// Reads and verifies one checkpoint directory; throws ConfigError naming the corrupt file.
Checkpoint readCheckpoint(const std::string& path);
// Only the verified trainer.json of a checkpoint (no tensors): cheap enough for a config check.
TrainerState readTrainerState(const std::string& path);

// The newest checkpoint in `folder` that verifies; the ones skipped (corrupt, incomplete) are
// described in `skipped`. Empty when none verifies.
std::optional<Checkpoint> newestValidCheckpoint(const std::string& folder, std::vector<std::string>& skipped);

// Removes all but the newest `keep` complete checkpoints; call after a newer one is complete.
void pruneCheckpoints(const std::string& folder, int64_t keep);

}  // namespace trainbench
