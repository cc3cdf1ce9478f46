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
    // The parts, for planners: one dense block, one MoE block (norms included), the embedding
    // table and the output head (each vocab_size x dim).
    int64_t dense_block = 0;
    int64_t moe_block = 0;
    int64_t embedding = 0;
    int64_t head = 0;
    int64_t attention = 0;  // one block's attention projections (MLA, its norms included)
    // The routed experts of every MoE layer (the modules' too): what expert parallelism divides
    // among ranks.
    int64_t routed_experts = 0;
    // The multi-token-prediction modules (model.n_mtp_depth), included in total and activated:
    // their unique parameters (each a block of the model's kind, eh_proj [d, 2d], enorm, hnorm
    // and its final norm; the embedding and the head are shared), and those one token touches.
    // The published checkpoint also stores a copy of the embedding and the head per module.
    int64_t mtp = 0;
    int64_t mtp_activated = 0;
};

ParamCount countParameters(const ModelConfig& model);

}  // namespace trainbench

// Floor: model/ (engine/README.md)
