// config.json of a Hugging Face DeepseekV2/V3 directory, written from a model section.
#pragma once

#include <nlohmann/json.hpp>

#include "trainbench/run_config.h"

namespace trainbench {

// `dtype`: bf16 | fp32, the weights' storage. `bos` / `eos`: the tokenizer's ids, or -1 (none).
// Both rope forms are written (rope_theta with rope_scaling for transformers 4, rope_parameters
// for 5), saying the same thing.
nlohmann::json hfConfigJson(const ModelConfig& model, const std::string& dtype, int64_t bos, int64_t eos);

}  // namespace trainbench
