// A metric point as a rank publishes it, for the suites that feed series and plots by hand.
#pragma once

#include <cstdint>
#include <string>

#include "trainbench/metric_point.h"

namespace trainbench::gui {

inline MetricPoint point(const std::string& key, int64_t step, double value, double wall = 0.0, int64_t tokens = 0) {
    MetricPoint p;
    p.key = key;
    p.step = step;
    p.value = value;
    p.wall_time = wall;
    p.tokens = tokens;
    return p;
}

}  // namespace trainbench::gui
