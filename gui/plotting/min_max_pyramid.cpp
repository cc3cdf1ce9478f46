// The min/max pyramid: built once per curve in O(n), queried per redraw in O(columns).
#include "plotting/min_max_pyramid.h"

#include <algorithm>
#include <cmath>

namespace trainbench::gui {

MinMaxPyramid::MinMaxPyramid(std::vector<double> xs, std::vector<double> ys) : xs_(std::move(xs)), ys_(std::move(ys)) {
    const size_t n = std::min(xs_.size(), ys_.size());
    xs_.resize(n);
    ys_.resize(n);
    // The first level straight from the points; each later one merges pairs of blocks.
    const size_t block = size_t(1) << kFirstLevel;
    std::vector<Extremes> level;
    level.reserve((n + block - 1) / block);
    for (size_t start = 0; start < n; start += block) {
        Extremes e{kNone, kNone};
        for (size_t i = start; i < std::min(n, start + block); ++i) include(e, static_cast<uint32_t>(i));
        level.push_back(e);
    }
    while (level.size() > 1) {
        std::vector<Extremes> next = merged(level);
        levels_.push_back(std::move(level));
        level = std::move(next);
    }
    levels_.push_back(std::move(level));
}

std::vector<MinMaxPyramid::Extremes> MinMaxPyramid::merged(const std::vector<Extremes>& below) const {
    std::vector<Extremes> next((below.size() + 1) / 2);
    for (size_t b = 0; b < next.size(); ++b) {
        Extremes e = below[2 * b];
        if (2 * b + 1 < below.size()) {
            const Extremes& other = below[2 * b + 1];
            if (other.low != kNone && (e.low == kNone || ys_[other.low] < ys_[e.low])) e.low = other.low;
            if (other.high != kNone && (e.high == kNone || ys_[other.high] > ys_[e.high])) e.high = other.high;
        }
        next[b] = e;
    }
    return next;
}

void MinMaxPyramid::include(Extremes& e, uint32_t index) const {
    const double y = ys_[index];
    if (!std::isfinite(y)) return;
    if (e.low == kNone || y < ys_[e.low]) e.low = index;
    if (e.high == kNone || y > ys_[e.high]) e.high = index;
}

void MinMaxPyramid::append(double x, double y) {
    xs_.push_back(x);
    ys_.push_back(y);
    const auto index = static_cast<uint32_t>(xs_.size() - 1);
    // The point's block on every level; a block starts where the last one is full.
    for (size_t l = 0; l < levels_.size(); ++l) {
        std::vector<Extremes>& blocks = levels_[l];
        const size_t b = size_t(index) >> (kFirstLevel + l);
        if (b == blocks.size()) blocks.push_back({kNone, kNone});
        include(blocks[b], index);
    }
    // The top level holds one block; a second one there calls for a level above both.
    while (levels_.back().size() > 1) levels_.push_back(merged(levels_.back()));
}

std::vector<CurvePoint> MinMaxPyramid::visible(double x_lower, double x_upper, int columns, int* level) const {
    std::vector<CurvePoint> out;
    if (level) *level = 0;
    if (xs_.empty()) return out;
    columns = std::max(columns, 1);
    // [first, last]: the points in range and one more on each side.
    size_t first = static_cast<size_t>(std::lower_bound(xs_.begin(), xs_.end(), x_lower) - xs_.begin());
    size_t last = static_cast<size_t>(std::upper_bound(xs_.begin(), xs_.end(), x_upper) - xs_.begin());
    if (first > 0) --first;
    if (last >= xs_.size()) last = xs_.size() - 1;
    if (last < first) return out;
    const size_t count = last - first + 1;
    if (count <= 8 * size_t(columns)) {
        out.reserve(count);
        for (size_t i = first; i <= last; ++i) out.push_back({xs_[i], ys_[i]});
        return out;
    }
    int k = kFirstLevel;
    while ((count >> k) >= 4 * size_t(columns) && k - kFirstLevel + 1 < int(levels_.size())) ++k;
    if (level) *level = k;
    const std::vector<Extremes>& blocks = levels_[k - kFirstLevel];
    out.reserve(2 * (count >> k) + 8);
    out.push_back({xs_[first], ys_[first]});
    auto add = [&](uint32_t index) {
        if (index != kNone && index > first && index < last) out.push_back({xs_[index], ys_[index]});
    };
    for (size_t b = first >> k; b <= (last >> k) && b < blocks.size(); ++b) {
        const Extremes& e = blocks[b];
        if (e.low == kNone) {  // nothing finite in the block: keep the gap
            const size_t start = std::max(first + 1, b << k);
            if (start < last) out.push_back({xs_[start], std::nan("")});
            continue;
        }
        add(std::min(e.low, e.high));
        if (e.high != e.low) add(std::max(e.low, e.high));
    }
    out.push_back({xs_[last], ys_[last]});
    return out;
}

}  // namespace trainbench::gui
