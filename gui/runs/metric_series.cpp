// MetricSeries: the points of one curve as they arrived, with their smoothed values.
#include "runs/metric_series.h"

#include <cmath>
#include <limits>

namespace trainbench::gui {

double sampleX(const SeriesSample& sample, XAxis axis) {
    switch (axis) {
    case XAxis::Step: return static_cast<double>(sample.step);
    case XAxis::Tokens: return sample.tokens;
    case XAxis::WallTime: return sample.wall;
    }
    return static_cast<double>(sample.step);
}

MetricSeries::MetricSeries(bool smoothed, double smoothing_weight)
    : smoothed_(smoothed), smoother_(smoothing_weight) {}

const SeriesSample& MetricSeries::append(const MetricPoint& point, double tokens) {
    // QCustomPlot draws NaN as a gap; an infinity would instead blow up the y range.
    const double value = std::isfinite(point.value) ? point.value : std::numeric_limits<double>::quiet_NaN();
    SeriesSample sample{point.step, tokens, point.wall_time, value, value};
    if (smoothed_) sample.smoothed = smoother_.add(value);
    samples_.push_back(sample);
    return samples_.back();
}

void MetricSeries::clear() {
    samples_.clear();
    smoother_.reset();
}

void MetricSeries::setSmoothingWeight(double weight) {
    smoother_ = EmaSmoother(weight);
    if (!smoothed_) return;
    for (SeriesSample& sample : samples_) sample.smoothed = smoother_.add(sample.value);
}

}  // namespace trainbench::gui
