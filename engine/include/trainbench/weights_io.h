// Weight files of a model config: fresh initialisation to safetensors, and evaluation of a file.
#pragma once

#include <cstdint>
#include <string>

#include "trainbench/eval_result.h"
#include "trainbench/noise_scale_measurement.h"
#include "trainbench/run_config.h"

namespace trainbench {

// Writes freshly initialised fp32 weights (reference state-dict names) for config.model.
// Throws ConfigError for an invalid config, std::runtime_error when the file cannot be written.
void writeInitialWeights(const RunConfig& config, uint64_t seed, const std::string& path);

// Loads weights from a safetensors file, a checkpoint directory or a Hugging Face directory (every
// name and shape checked) and evaluates the mean
// token loss over the data section's validation windows. Throws ConfigError naming the first
// mismatching tensor or the bad input.
EvalResult evaluateWeightsFile(const RunConfig& config, const std::string& weights_path);

// Loads weights as evaluateWeightsFile does (a model.safetensors file, or a checkpoint
// directory holding one) and measures the noise scale over the validation windows in
// micro-batches of `micro_batch_size` (0: train.micro_batch_size). Throws ConfigError for a bad
// config, file or size.
NoiseScaleMeasurement measureNoiseScaleOfWeights(const RunConfig& config, const std::string& weights_path,
                                                 int64_t micro_batch_size);
// The same for a checkpoint directory with the config it was trained with (its verified
// trainer.json), whatever the config in hand now.
NoiseScaleMeasurement measureNoiseScaleOfCheckpoint(const std::string& checkpoint_dir, int64_t micro_batch_size);

}  // namespace trainbench

// Floor: interop/ (engine/README.md)
