// MetricSeries: the points of one curve as they arrived, with their smoothed values.
#pragma once

#include <cstdint>
#include <vector>

#include "common/ema_smoother.h"
#include "common/x_axis.h"
#include "trainbench/metric_point.h"

namespace trainbench::gui {

// One point as it arrived, with every x it may be drawn at, so the x axis can switch without
// losing anything.
struct SeriesSample {
    int64_t step;
    double tokens;
    double wall;
    double value;     // NaN for a non-finite point: drawn as a gap, kept out of ranges
    double smoothed;  // the EMA at this point; the value itself for an unsmoothed series
};

// The sample's x on `axis`: its step, the tokens seen after it, or its wall time.
double sampleX(const SeriesSample& sample, XAxis axis);

// Plain data, no widget: the full series is kept and smoothed, never a downsampled copy.
class MetricSeries {
public:
    explicit MetricSeries(bool smoothed = false, double smoothing_weight = 0.6);

    // Appends `point`, seen at `tokens` (StepPositions::tokensAt); returns the sample stored.
    const SeriesSample& append(const MetricPoint& point, double tokens);
    void clear();
    // Re-smooths every sample with this weight (clamped as EmaSmoother clamps it).
    void setSmoothingWeight(double weight);

    bool smoothed() const { return smoothed_; }
    const std::vector<SeriesSample>& samples() const { return samples_; }

private:
    bool smoothed_;
    EmaSmoother smoother_;
    std::vector<SeriesSample> samples_;
};

}  // namespace trainbench::gui
