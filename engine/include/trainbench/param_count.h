// Parameter counts of a DeepSeek-style model from its config, without allocating it.
#pragma once

#include <cstdint>

#include "trainbench/run_config.h"

namespace trainbench {

struct ParamCount {
    int64_t total = 0;
    // Parameters touched by one token: embedding, head, attention, norms, dense MLPs, gates,
    // shared experts and n_activated_experts routed experts per MoE layer.
    int64_t activated = 0;
    int64_t state_dict_tensors = 0;
};

ParamCount countParameters(const ModelConfig& model);

}  // namespace trainbench
