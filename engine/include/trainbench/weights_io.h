// Weight files of a model config: fresh initialisation to safetensors, and evaluation of a file.
#pragma once

#include <cstdint>
#include <string>

#include "trainbench/run_config.h"

namespace trainbench {

// Writes freshly initialised fp32 weights (reference state-dict names) for config.model.
// Throws ConfigError for an invalid config, std::runtime_error when the file cannot be written.
void writeInitialWeights(const RunConfig& config, uint64_t seed, const std::string& path);

struct EvalResult {
    double loss = 0;     // mean token loss in nats
    int64_t tokens = 0;  // counted target tokens
    int64_t windows = 0;
};

// Loads weights from a safetensors file (every name and shape checked) and evaluates the mean
// token loss over the data section's validation windows. Throws ConfigError naming the first
// mismatching tensor or the bad input.
EvalResult evaluateWeightsFile(const RunConfig& config, const std::string& weights_path);

}  // namespace trainbench
