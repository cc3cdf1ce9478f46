// RobustRange: the y extent of a curve that one spike cannot flatten.
#pragma once

#include <QVector>

namespace trainbench::gui {

struct ValueExtent {
    double lower = 0.0;
    double upper = 0.0;
};

// The `lower_quantile`..`upper_quantile` extent of the finite `values` (positive ones only
// when `positive_only`, for a log axis), then padded by `padding` of its span on each side
// (by the same fraction of its decades on a log axis) so lines never touch the frame.
// Quantiles 0 and 1 give the full extent. Returns false when no value qualifies.
// Above kMaxExactValues values the quantiles come from an even stride through them: the
// extent is a view setting, and a 1M-point series must not cost a full sort per redraw.
bool robustExtent(const QVector<double>& values, double lower_quantile, double upper_quantile, double padding,
                  bool positive_only, ValueExtent* out);

inline constexpr int kMaxExactValues = 20000;

}  // namespace trainbench::gui
