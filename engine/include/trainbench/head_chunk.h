// How many tokens the output head and its cross-entropy take at a time (runtime.head_chunk_tokens):
// the one rule the model runs and the planner counts.
#pragma once

#include <cstdint>
#include <optional>

#include "trainbench/run_config.h"

namespace trainbench {

// The rows of one chunk for a micro-batch of `tokens` tokens; 0: the whole head (no chunks).
// `setting` nullopt ("auto"): chunks whose logits [chunk, vocab] are about the size of the
// hidden states [tokens, dim], ceil(tokens / ceil(vocab / dim)) rounded up to a power of two,
// but at least kMinHeadChunkTokens (smaller products lose speed: a chunk's gradient products
// are [chunk x vocab] by [chunk x dim]), and never more than the micro-batch.
constexpr int64_t kMinHeadChunkTokens = 1024;
int64_t headChunkRows(const ModelConfig& model, const std::optional<int64_t>& setting, int64_t tokens);

}  // namespace trainbench

// Floor: model/ (engine/README.md)
