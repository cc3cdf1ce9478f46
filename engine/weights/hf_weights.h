// Weights of a Hugging Face directory as this engine's state dict, and the other way.
#pragma once

#include <string>
#include <vector>

#include "model/safetensors.h"
#include "model/transformer.h"
#include "trainbench/run_config.h"

namespace trainbench {

// The directory's weights (model.safetensors, or the shards its model.safetensors.index.json
// names) under the reference names, fp32, checked against `model` name by name and shape by
// shape: either expert layout; bf16, fp16 or fp32 storage; fp8 block-quantised weights
// (weight_scale_inv) dequantised; multi-token-prediction layers past num_hidden_layers left out
// (said in `notes`). Throws ConfigError naming the file and the first tensor at fault.
NamedTensors readHuggingFaceWeights(const std::string& dir, const ModelConfig& model,
                                    std::vector<std::string>* notes = nullptr);

// A train.init_from source as the model's state dict: a Hugging Face directory, a checkpoint
// directory (its model.safetensors) or a safetensors file of reference names.
NamedTensors readInitialWeights(const std::string& path, const ModelConfig& model);

// Such a source read into `model` (its own config): ConfigError naming `path` for missing,
// extra or misshapen tensors.
void loadWeightsInto(Transformer& model, const std::string& path);

}  // namespace trainbench
