// A Hugging Face model directory read as this engine's model: its config.json as a model
// section, and whether a path is such a directory or weights that fit a model section.
#pragma once

#include <string>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

// The architecture a model section exports as: the sigmoid router as DeepseekV3, the softmax
// one as DeepseekV2. Throws ConfigError naming the model field that transformers cannot express.
std::string hfArchitectureFor(const ModelConfig& model);

// A Hugging Face directory's config.json as a model section. Refuses, naming the key, what this
// engine does not model (another architecture, tied embeddings, attention biases, another
// activation or norm epsilon, non-interleaved rotary, a router normalisation the reference does
// not have); ignores what does not change the model (token ids, cache and parallel settings).
// `notes` gets what was left out that a user should know. num_nextn_predict_layers becomes
// model.n_mtp_depth: DeepSeek-V3's module is trained and exported with the model.
ModelConfig readHuggingFaceConfig(const std::string& dir, std::vector<std::string>* notes = nullptr);

// True when `path` is a directory holding a config.json (a Hugging Face model directory).
bool isHuggingFaceDirectory(const std::string& path);

// Checks that a train.init_from weights source fits the model section without reading the
// tensors' data (names, shapes, dtypes from the headers; for an HF directory also its
// config.json): throws ConfigError naming train.init_from and the first mismatch.
void checkInitialWeights(const ModelConfig& model, const std::string& path);

}  // namespace trainbench

// Floor: weights/ (engine/README.md)
