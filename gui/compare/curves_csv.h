// Curves CSV: the points of the curves a Compare view shows, as CSV text with one point per line.
#pragma once

#include <vector>

#include <QString>

#include "trainbench/metric_point.h"

namespace trainbench::gui {

// Every stored point of one key of one run: nothing downsampled.
struct RunCurve {
    QString run_id;
    QString name;
    std::vector<MetricPoint> points;
};

// A header row `run_id,step,tokens,wall_time,key,value`, then the points of each curve in order.
// Numbers are written with 17 significant digits, so a double reads back bit for bit; fields
// with a comma, quote or line break are quoted.
QString curvesCsv(const std::vector<RunCurve>& curves);

}  // namespace trainbench::gui
