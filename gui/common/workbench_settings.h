// The workbench's one settings store: the window's layout (app/), this machine's measured rates
// (batch/) and whatever a view keeps.
#pragma once

#include <memory>

#include <QSettings>

namespace trainbench::gui {

// The INI file TRAINBENCH_SETTINGS names (tests, and people who keep several), else the
// platform's store for organisation and application "Trainbench".
std::unique_ptr<QSettings> openWorkbenchSettings();

}  // namespace trainbench::gui
