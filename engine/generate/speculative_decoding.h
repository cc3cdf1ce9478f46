// Self-speculative decoding: the model's multi-token-prediction module drafts the token after
// next, the main model verifies it in the same forward that decodes the next one.
#pragma once

#include <vector>

#include "generate/generation.h"

namespace trainbench {

// Greedy continuation of each prompt (alone, one cache row): generate()'s greedy tokens (a
// forward over two positions rounds like one over a position up to the last bits, so only a
// near tie could break otherwise) and log-probabilities to rounding. With the cache at position
// p and the next token a known, module 1 drafts b = t_{p+2} from the main model's hidden state
// at p and a; one main forward over [a, b]
// then gives the true t_{p+2} (if it is b, both are kept and the forward's second position gives
// t_{p+3} too: two tokens for one forward) and the hidden states the next draft starts from. A
// rejected draft's cache entry is overwritten by the next forward. Needs model.n_mtp_depth >= 1
// and temperature 0 (std::invalid_argument naming them otherwise). `timing` counts the drafts,
// the accepted ones and the main model's decoding forwards.
std::vector<Generation> generateSpeculatively(Transformer& model, const std::vector<std::vector<int64_t>>& prompts,
                                              const GenerationOptions& options, GenerationTiming* timing = nullptr);

}  // namespace trainbench
