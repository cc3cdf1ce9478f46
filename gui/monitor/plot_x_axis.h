// PlotXAxis: the quantities the live plots can put on their shared x axis.
#pragma once

#include <QString>

namespace trainbench::gui {

// Tokens seen is the only fair axis when runs differ in effective batch size; wall time shows
// where a run spends its time (stalls, slow evaluations, checkpoint writes).
enum class XAxis { Step, Tokens, WallTime };

inline QString xAxisTitle(XAxis axis) {
    switch (axis) {
    case XAxis::Step: return QStringLiteral("optimizer step");
    case XAxis::Tokens: return QStringLiteral("tokens seen");
    case XAxis::WallTime: return QStringLiteral("wall time since start (h:mm:ss)");
    }
    return {};
}

}  // namespace trainbench::gui
