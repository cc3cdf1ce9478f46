// StepPositions: where a run's steps lie on each x axis (step, tokens seen, wall time), and which axis is chosen.
#pragma once

#include <cstdint>
#include <span>

#include <QVector>

#include "common/x_axis.h"
#include "runs/metric_series.h"
#include "trainbench/metric_point.h"

namespace trainbench::gui {

// Plain data, no widget. The tokens seen after a step come from train/tokens, its wall time
// from train/loss; both are tables indexed by step (dense: a run logs most steps), so a
// curve can be redrawn against another axis without losing a point.
class StepPositions {
public:
    // Beyond this step, steps are not a dense index and nothing is tabled.
    static constexpr int64_t kMaxStepTable = 100'000'000;

    void clear();
    void setAxis(XAxis axis) { axis_ = axis; }
    XAxis axis() const { return axis_; }

    // Tables the train/tokens points of a batch. Called before the batch's samples: the
    // points of a step carry the step, and train/tokens says where it ends, whichever order
    // the batch lists them in.
    void noteTokens(std::span<const MetricPoint> points);
    void noteTokens(const QVector<MetricPoint>& points) { noteTokens(std::span(points.constData(), points.size())); }
    void noteWall(int64_t step, double wall_time);
    // The tokens seen after `step`, or `fallback` when not tabled.
    double tokensAt(int64_t step, double fallback) const;

    // The sample's x on the chosen axis.
    double xOf(const SeriesSample& sample) const;
    // An event's x at `step`: on the tokens axis the tokens after the step, or after the
    // closest tabled step before it scaled by step / that step; on the wall axis `wall` when
    // finite, else the step's; NaN when unknown.
    double markerX(int64_t step, double wall) const;

private:
    QVector<double> tokens_at_step_;
    QVector<double> wall_at_step_;
    XAxis axis_ = XAxis::Step;
};

}  // namespace trainbench::gui
