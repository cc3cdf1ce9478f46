// EpochPermutation: a keyed Feistel network over the next power of four, walked back into range.
#include "data/epoch_permutation.h"

#include <stdexcept>
#include <string>

#include "data/sample_rng.h"

namespace trainbench {
namespace {

constexpr int kRounds = 4;

}  // namespace

EpochPermutation::EpochPermutation(int64_t count, uint64_t seed) : count_(count), seed_(seed), half_bits_(1) {
    if (count < 1) throw std::invalid_argument("EpochPermutation: count must be >= 1, got " + std::to_string(count));
    // Smallest even bit width whose domain holds count: at most 4x too large, so the cycle walk
    // below takes fewer than 4 network evaluations on average.
    while (half_bits_ < 31 && (uint64_t{1} << (2 * half_bits_)) < static_cast<uint64_t>(count)) ++half_bits_;
}

uint64_t EpochPermutation::feistel(uint64_t epoch, uint64_t x) const {
    const uint64_t mask = (uint64_t{1} << half_bits_) - 1;
    uint64_t left = x >> half_bits_, right = x & mask;
    for (int round = 0; round < kRounds; ++round) {
        // Each round is invertible whatever the round function, so the network is a bijection.
        SampleRng keyed(seed_, epoch * kRounds + static_cast<uint64_t>(round), right);
        const uint64_t mixed = left ^ (keyed.next() & mask);
        left = right;
        right = mixed;
    }
    return (left << half_bits_) | right;
}

int64_t EpochPermutation::permute(int64_t epoch, int64_t position) const {
    // Cycle walking: iterate the bijection on the larger domain until it lands in [0, count).
    // Starting inside the range, the cycle through `position` comes back into it, so this ends.
    uint64_t x = static_cast<uint64_t>(position);
    do {
        x = feistel(static_cast<uint64_t>(epoch), x);
    } while (x >= static_cast<uint64_t>(count_));
    return static_cast<int64_t>(x);
}

int64_t EpochPermutation::operator()(int64_t global_index) const {
    return permute(global_index / count_, global_index % count_);
}

}  // namespace trainbench
