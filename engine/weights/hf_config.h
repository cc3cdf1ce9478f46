// config.json of a Hugging Face DeepseekV2/V3 directory, written from a model section.
#pragma once

#include <nlohmann/json.hpp>

#include "trainbench/run_config.h"

namespace trainbench {

// `fp32_storage`: the weights are stored in fp32 (else bf16). `bos` / `eos`: the tokenizer's
// ids, or -1 (none). Both rope forms are written (rope_theta with rope_scaling for transformers
// 4, rope_parameters for 5), saying the same thing.
nlohmann::json hfConfigJson(const ModelConfig& model, bool fp32_storage, int64_t bos, int64_t eos);

}  // namespace trainbench
