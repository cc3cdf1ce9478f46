// Text from a trained model: prompts encoded with the data section's tokenizer, continued by the
// model with the attention cache, decoded back. The offline front end of `trainbench-cli
// generate` and the workbench's samples. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

struct TextGenerationRequest {
    RunConfig config;     // the model and the data section whose tokenizer encodes the prompts
    std::string weights;  // model.safetensors, a checkpoint directory or a Hugging Face directory
    std::vector<std::string> prompts;
    int64_t max_new_tokens = 64;
    double temperature = 1.0;  // 0: greedy
    int64_t top_k = 0;         // 0: all tokens
    double top_p = 1.0;        // 1: all tokens
    uint64_t seed = 0;
    bool absorbed_cache = true;  // MLA's compressed cache (false: per-head keys and values)
    // Self-speculative decoding with the multi-token-prediction module (greedy, the same tokens).
    bool speculative_mtp = false;
};

struct TextCompletion {
    std::string prompt;
    std::string text;  // the new tokens decoded (without the end token)
    std::vector<int64_t> prompt_ids, ids;
    std::vector<double> logprobs;  // per new token, under the model's distribution
    bool ended = false;            // stopped at the tokenizer's end token
};

struct TextGeneration {
    std::vector<TextCompletion> completions;
    double prefill_tokens_per_s = 0;
    double decode_tokens_per_s = 0;
    // Speculative decoding: drafted tokens the main model confirmed, over those drafted; new
    // tokens per main-model decoding forward.
    int64_t drafted = 0, accepted = 0;
    double acceptance_rate = 0;
    double tokens_per_forward = 0;
};

// ConfigError naming the culprit for bad input: a config without text (data.source markov), a
// prompt the tokenizer cannot encode or that is empty, one too long for model.max_seq_len,
// weights of another model, or speculative decoding without a module (model.n_mtp_depth) or
// with a temperature.
TextGeneration generateText(const TextGenerationRequest& request);

}  // namespace trainbench

// Floor: interop/ (engine/README.md)
