// RobustRange: the y extent of a curve that one spike cannot flatten.
#include "plotting/robust_range.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace trainbench::gui {

namespace {

// Linear interpolation between the closest ranks, as numpy's default: q = 0 is the minimum.
double quantileOf(std::vector<double>& values, double q) {
    const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
    const auto below = static_cast<size_t>(std::floor(rank));
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(below), values.end());
    const double low = values[below];
    if (below + 1 >= values.size() || rank == static_cast<double>(below)) return low;
    // The next rank is the smallest value above `below` after nth_element's partition.
    const double high = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(below) + 1, values.end());
    return low + (rank - static_cast<double>(below)) * (high - low);
}

}  // namespace

bool robustExtent(const QVector<double>& values, double lower_quantile, double upper_quantile, double padding,
                  bool positive_only, ValueExtent* out) {
    const qsizetype stride = std::max<qsizetype>(1, values.size() / kMaxExactValues);
    std::vector<double> kept;
    kept.reserve(static_cast<size_t>(values.size() / stride + 1));
    for (qsizetype i = 0; i < values.size(); i += stride) {
        const double value = values[i];
        if (std::isfinite(value) && (!positive_only || value > 0.0)) kept.push_back(value);
    }
    if (kept.empty()) return false;
    double lower = quantileOf(kept, lower_quantile);
    double upper = quantileOf(kept, upper_quantile);
    if (positive_only) {
        // Pad in decades: a log axis shows ratios, so the margin is a ratio too.
        const double decades = std::max(std::log10(upper / lower), 0.05);
        const double factor = std::pow(10.0, padding * decades);
        lower /= factor;
        upper *= factor;
    } else {
        double span = upper - lower;
        if (span <= 0.0) span = std::max(std::abs(upper) * 0.1, 1e-12);
        lower -= padding * span;
        upper += padding * span;
    }
    *out = ValueExtent{lower, upper};
    return true;
}

}  // namespace trainbench::gui
