// XAxis: the quantities a plot of a run can put on its x axis (the live plots, the compared curves).
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
