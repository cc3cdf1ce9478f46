// Generation: prompts (token ids) continued by the model, one token at a time, with the
// attention cache (model/kv_cache.h). Prompts are batched up to model.max_batch_size rows at a
// time (more run in waves); each row keeps its own positions, so a batch gives every prompt what
// it would get alone.
#pragma once

#include <cstdint>
#include <vector>

#include "generate/sampling.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

namespace trainbench {

struct GenerationOptions {
    SamplingOptions sampling;
    int64_t max_new_tokens = 64;
    uint64_t seed = 0;
    int64_t end_token = -1;  // generation of a row stops at it (kept, not printed); -1: none
    CacheForm form = CacheForm::Absorbed;
    // Self-speculative decoding with the model's first multi-token-prediction module
    // (generate/speculative_decoding.h): greedy only, the same tokens as plain greedy decoding.
    bool speculative_mtp = false;
};

struct Generation {
    std::vector<int64_t> tokens;    // the new ones, the end token included when it came
    std::vector<double> logprobs;   // of each new token under the model's own distribution (temperature 1)
    bool ended = false;             // stopped at the end token
};

struct GenerationTiming {
    int64_t prefill_tokens = 0, decode_tokens = 0;
    double prefill_seconds = 0, decode_seconds = 0;
    // Speculative decoding: tokens the module drafted, those the main model confirmed, and the
    // main model's decoding forwards.
    int64_t drafted = 0, accepted = 0, forwards = 0;
};

// Throws std::invalid_argument naming the prompt and the field when a prompt is empty, holds an id
// outside the vocabulary or does not fit model.max_seq_len with max_new_tokens more.
void checkPrompts(const ModelConfig& model, const std::vector<std::vector<int64_t>>& prompts, int64_t max_new_tokens);

// Each prompt (non-empty, prompt + max_new_tokens within model.max_seq_len: std::invalid_argument
// naming the field otherwise) continued. The draws of a run come from one generator seeded with
// options.seed, in prompt order within each step.
std::vector<Generation> generate(Transformer& model, const std::vector<std::vector<int64_t>>& prompts,
                                 const GenerationOptions& options, GenerationTiming* timing = nullptr);

}  // namespace trainbench
