// The learning-rate schedule: linear warm-up, then constant, cosine or linear decay, counted in
// optimizer steps, or in token positions where the batch changes (train.batch_policy).
#pragma once

#include <cstdint>

#include "trainbench/run_config.h"

namespace trainbench {

// LR used by the update of optimizer step `step` (0-based).
// `total_steps`: the optimizer steps of the run (BatchSchedule::plannedSteps()).
double learningRate(const TrainConfig& train, int64_t step, int64_t total_steps);

// Where a step lies in a run counted in token positions (sequences x seq_len).
struct TokenClock {
    int64_t step = 0;            // 0-based
    int64_t tokens_before = 0;   // read by the steps before this one
    int64_t tokens_through = 0;  // ... and by this one
    int64_t warmup_end = 0;      // where the warm-up ends and the decay starts
    int64_t total = 0;           // the run's planned token positions
};

// The same schedule over tokens, so that a growing batch ends the decay at the planned token
// count: warm-up over train.warmup_tokens (lr x tokens_through / warmup_tokens), or over
// train.warmup_steps steps when that is 0; the decay from `warmup_end` to `total`. With a fixed
// batch it equals learningRate.
double learningRate(const TrainConfig& train, const TokenClock& clock);

}  // namespace trainbench
