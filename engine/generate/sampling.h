// Choosing the next token from logits: temperature, top-k and top-p (nucleus) filtering, then a
// draw from a seeded generator; temperature 0 is greedy (the most likely token).
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace trainbench {

struct SamplingOptions {
    double temperature = 1.0;  // 0: greedy
    int64_t top_k = 0;         // keep the k most likely tokens; 0: all
    double top_p = 1.0;        // keep the fewest most likely tokens whose probability reaches p; 1: all
};

// The distribution a token is drawn from: softmax(logits / temperature) over the tokens the
// filters keep, renormalised, fp64 [V]. Ties at the top-k boundary keep the lower ids first
// (a stable sort). With temperature 0: all mass on the most likely token (the lowest id of a tie).
torch::Tensor samplingDistribution(const torch::Tensor& logits, const SamplingOptions& options);

// A token drawn from samplingDistribution with `generator`; greedy needs no draw.
int64_t drawToken(const torch::Tensor& logits, const SamplingOptions& options, at::Generator& generator);

}  // namespace trainbench
