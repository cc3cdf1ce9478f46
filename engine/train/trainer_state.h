// trainer.json: what a checkpoint holds besides its tensors. No torch here, so the reader can
// be fuzzed on its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trainbench {

// The data cursor is the optimizer step: batches are a pure function of (seed, step, rank,
// micro-batch), so no sampler state is needed, and training draws no random numbers, so no
// RNG state is needed either.
struct TrainerState {
    int64_t step = 0;    // optimizer steps completed
    int64_t tokens = 0;  // training tokens counted so far
    double last_loss = 0;  // NaN when every step so far was skipped
    std::string config_json;
    // The noise scale's smoothed state (NoiseScaleTracker::state, total then per group); empty
    // when the run had none (or wrote an older checkpoint).
    std::vector<double> noise_scale;
    // train.batch_policy adaptive: the batch's changes so far as (first step, sequences), and the
    // token positions its estimate has stayed above the threshold since (BatchAdaptation).
    std::vector<std::pair<int64_t, int64_t>> batch_changes;
    int64_t batch_dwell_tokens = 0;
};

// Parses the text of a trainer.json named `origin` in messages. With `file_hashes`, also
// returns the SHA-256 it records for model.safetensors and optimizer.safetensors. Throws
// ConfigError naming `origin` and the field when anything is missing or of the wrong kind.
TrainerState parseTrainerJson(const std::string& text, const std::string& origin,
                              std::map<std::string, std::string>* file_hashes = nullptr);

}  // namespace trainbench
