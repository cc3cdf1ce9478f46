// The learning-rate schedule over optimizer steps: linear warm-up, then constant, cosine or linear.
#pragma once

#include <cstdint>

#include "trainbench/run_config.h"

namespace trainbench {

// LR used by the update of optimizer step `step` (0-based).
// `total_steps`: the optimizer steps of the run (RunConfig::optimizerSteps()).
double learningRate(const TrainConfig& train, int64_t step, int64_t total_steps);

}  // namespace trainbench
