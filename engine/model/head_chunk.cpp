// The head's chunk rule (trainbench/head_chunk.h).
#include "trainbench/head_chunk.h"

#include <algorithm>

namespace trainbench {

int64_t headChunkRows(const ModelConfig& model, const std::optional<int64_t>& setting, int64_t tokens) {
    if (tokens <= 0) return 0;
    if (setting) return *setting <= 0 ? 0 : std::min(*setting, tokens);
    const int64_t dim = std::max<int64_t>(1, model.dim);
    const int64_t widening = std::max<int64_t>(1, (model.vocab_size + dim - 1) / dim);  // vocab per hidden width
    const int64_t rows = (tokens + widening - 1) / widening;
    int64_t power = 1;
    while (power < rows) power <<= 1;
    return std::min(tokens, std::max(kMinHeadChunkTokens, power));
}

}  // namespace trainbench
