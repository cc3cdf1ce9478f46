// The validation hold-out rule shared by the finite sources: the last fraction of a sequence.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace trainbench {

// How many of `n` items (tokens or documents) at the end are held out for validation. A
// positive fraction holds out at least one item and always leaves one for training, so a
// small corpus still gets both parts (whether they hold a whole window is checked on open).
inline int64_t heldOutCount(int64_t n, double val_fraction) {
    if (n < 2 || !(val_fraction > 0)) return 0;
    const auto held = static_cast<int64_t>(std::floor(static_cast<double>(n) * val_fraction));
    return std::clamp<int64_t>(held, 1, n - 1);
}

}  // namespace trainbench
