// Deterministic batch assignment and the causal shift of windows into inputs and targets.
#include "data/batch_sampler.h"

#include "data/epoch_permutation.h"

namespace trainbench {

std::vector<int64_t> sampleIndices(int64_t step, int64_t rank, int64_t micro, int64_t m, int64_t K, int64_t W,
                                   int64_t window_micro_batches) {
    return sampleIndicesFrom(step * m * K * W, rank, micro, m, window_micro_batches < 0 ? K : window_micro_batches);
}

std::vector<int64_t> sampleIndicesFrom(int64_t first_sample, int64_t rank, int64_t micro, int64_t m,
                                       int64_t micro_batches_per_rank) {
    const int64_t first = first_sample + rank * m * micro_batches_per_rank + micro * m;
    std::vector<int64_t> out(m);
    for (int64_t i = 0; i < m; ++i) out[i] = first + i;
    return out;
}

std::vector<int64_t> sourceSampleIndices(const std::vector<int64_t>& global_indices, int64_t sample_count,
                                         uint64_t seed) {
    if (sample_count < 0) return global_indices;
    const EpochPermutation order(sample_count, seed);
    std::vector<int64_t> out;
    out.reserve(global_indices.size());
    for (int64_t g : global_indices) out.push_back(order(g));
    return out;
}

MicroBatch readMicroBatch(const TokenSource& source, Split split, const std::vector<int64_t>& indices,
                          int64_t seq_len) {
    const int64_t rows = static_cast<int64_t>(indices.size());
    auto window = torch::empty({rows, seq_len + 1}, torch::kInt64);
    int64_t* data = window.data_ptr<int64_t>();
    for (int64_t r = 0; r < rows; ++r) source.readSample(split, indices[r], seq_len + 1, data + r * (seq_len + 1));
    // An ignored position (-1) cannot be an input; its embedding row is irrelevant because its
    // target and every later target of a padded row are ignored too.
    auto inputs = window.slice(1, 0, seq_len).clamp_min(0).contiguous();
    auto targets = window.slice(1, 1, seq_len + 1).contiguous();
    if (source.hasPromptTokens()) {
        // A prompt's tokens are read as inputs but never predicted: their targets are ignored.
        auto counted = torch::empty({rows, seq_len + 1}, torch::kUInt8);
        uint8_t* marks = counted.data_ptr<uint8_t>();
        for (int64_t r = 0; r < rows; ++r)
            source.readCounted(split, indices[r], seq_len + 1, marks + r * (seq_len + 1));
        targets.masked_fill_(counted.slice(1, 1, seq_len + 1).eq(0), -1);
    }
    return {inputs, targets};
}

}  // namespace trainbench
