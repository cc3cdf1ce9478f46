// The divisors of a count (a per-rank batch, a global batch over the ranks): the splits a batch
// allows. By trial division up to the square root: a count of 2^40 takes 2^20 divisions, where
// counting up to it would not end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace trainbench {

// Ascending; empty for n < 1.
inline std::vector<int64_t> divisorsOf(int64_t n) {
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= n / d; ++d) {
        if (n % d != 0) continue;
        divisors.push_back(d);
        if (d != n / d) divisors.push_back(n / d);
    }
    std::sort(divisors.begin(), divisors.end());
    return divisors;
}

}  // namespace trainbench

// Floor: config/ (engine/README.md)
