// BatchSampler: (optimizer step, rank, micro-batch) -> sample indices -> token/target tensors.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "data/token_source.h"

namespace trainbench {

struct MicroBatch {
    torch::Tensor tokens;   // [m, T] int64, inputs
    torch::Tensor targets;  // [m, T] int64, next tokens; -1 where a target does not count
};

// The global batch of step s is the sample range [s*B, (s+1)*B), B = m*K*W. Rank r takes the
// contiguous block [r*m*K, (r+1)*m*K) of it and micro-batch k the k-th m samples of that
// block, so the union over ranks and micro-batches is the same set for every split of B.
// An incomplete last window of `window_micro_batches` < K micro-batches per rank starts where
// a full one would and takes [s*B, s*B + m*window*W) the same way (-1: a full window).
std::vector<int64_t> sampleIndices(int64_t step, int64_t rank, int64_t micro, int64_t micro_batch_size,
                                   int64_t accumulation_steps, int64_t world_size,
                                   int64_t window_micro_batches = -1);

// The same from the step's first global sample (a batch schedule's, trainbench/batch_schedule.h)
// with `micro_batches_per_rank` micro-batches of m per rank in the window.
std::vector<int64_t> sampleIndicesFrom(int64_t first_sample, int64_t rank, int64_t micro, int64_t m,
                                       int64_t micro_batches_per_rank);

// The source samples behind a rank's global indices (from sampleIndices). A finite source of
// `sample_count` samples is read in epochs, each a fresh EpochPermutation order keyed by
// (seed, epoch), so no sample repeats within an epoch; an unbounded source (sample_count -1)
// reads sample g for global index g. Mapping index by index keeps sampleIndices' contract.
std::vector<int64_t> sourceSampleIndices(const std::vector<int64_t>& global_indices, int64_t sample_count,
                                         uint64_t seed);

// Reads windows of T+1 tokens for the samples and shifts them into inputs and targets.
MicroBatch readMicroBatch(const TokenSource& source, Split split, const std::vector<int64_t>& indices,
                          int64_t seq_len);

}  // namespace trainbench
