// StepPositions: where a run's steps lie on each x axis (step, tokens seen, wall time), and which axis is chosen.
#include "runs/step_positions.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trainbench/metric_keys.h"

namespace trainbench::gui {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

void StepPositions::clear() {
    tokens_at_step_.clear();
    wall_at_step_.clear();
}

void StepPositions::noteTokens(std::span<const MetricPoint> points) {
    for (const MetricPoint& point : points) {
        if (point.key != metric::kTokens || point.step < 0 || point.step >= kMaxStepTable) continue;
        if (tokens_at_step_.size() <= point.step) tokens_at_step_.resize(point.step + 1, kNaN);
        tokens_at_step_[point.step] = point.value;
    }
}

void StepPositions::noteWall(int64_t step, double wall_time) {
    if (step < 0 || step >= kMaxStepTable) return;
    if (wall_at_step_.size() <= step) wall_at_step_.resize(step + 1, kNaN);
    wall_at_step_[step] = wall_time;
}

double StepPositions::tokensAt(int64_t step, double fallback) const {
    if (step >= 0 && step < tokens_at_step_.size() && std::isfinite(tokens_at_step_[step])) return tokens_at_step_[step];
    return fallback;
}

double StepPositions::xOf(const SeriesSample& sample) const { return sampleX(sample, axis_); }

double StepPositions::markerX(int64_t step, double wall) const {
    switch (axis_) {
    case XAxis::Step: return static_cast<double>(step);
    case XAxis::Tokens:
        for (int64_t at = std::min<int64_t>(step, tokens_at_step_.size() - 1); at >= 0; --at)
            if (std::isfinite(tokens_at_step_[at]))
                return tokens_at_step_[at] * (at == step ? 1.0 : double(step) / std::max<int64_t>(at, 1));
        return kNaN;
    case XAxis::WallTime:
        if (std::isfinite(wall)) return wall;
        if (step >= 0 && step < wall_at_step_.size()) return wall_at_step_[step];
        return kNaN;
    }
    return kNaN;
}

}  // namespace trainbench::gui
