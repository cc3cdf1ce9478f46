// SampleRng: a counter-based generator, so sample i is produced without generating 0..i-1.
#pragma once

#include <cstdint>

namespace trainbench {

class SampleRng {
public:
    SampleRng(uint64_t seed, uint64_t stream, uint64_t index)
        : state_(mix(mix(seed ^ 0x9E3779B97F4A7C15ull) ^ mix(stream + 0x632BE59BD9B4E019ull) ^ mix(index))) {}

    uint64_t next() { return mix(state_ += 0x9E3779B97F4A7C15ull); }
    // Uniform in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    // SplitMix64's finaliser: a bijective avalanche of 64 bits.
    static uint64_t mix(uint64_t z) {
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t state_;
};

}  // namespace trainbench
