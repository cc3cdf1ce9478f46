// EpochPermutation: a stateless shuffle of a finite source's samples, a fresh order every epoch.
#pragma once

#include <cstdint>

namespace trainbench {

// Global sample index g (the sampler's position in the stream of all samples ever drawn) maps
// to epoch g / count and position g % count, and the position goes through a permutation of
// [0, count) keyed by (seed, epoch). Any g is mapped in O(1) without the ones before it, so
// ranks need no shared state and a resumed run continues the same order.
class EpochPermutation {
public:
    EpochPermutation(int64_t count, uint64_t seed);

    // The source sample read for global index g >= 0.
    int64_t operator()(int64_t global_index) const;
    // The permutation of epoch `epoch`, applied to position in [0, count).
    int64_t permute(int64_t epoch, int64_t position) const;

    int64_t count() const { return count_; }

private:
    uint64_t feistel(uint64_t epoch, uint64_t x) const;
    int64_t count_;
    uint64_t seed_;
    int half_bits_;  // the permuted domain is [0, 2^(2*half_bits)) >= count
};

}  // namespace trainbench
