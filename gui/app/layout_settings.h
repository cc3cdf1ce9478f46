// Where the workbench remembers its window layout between sessions (geometry, splitters, the open tab).
#pragma once

#include <memory>

#include <QSettings>

namespace trainbench::gui {

// The settings of organisation "Trainbench", application "Trainbench"; or, when the
// environment variable TRAINBENCH_SETTINGS names a file, that INI file instead (scripts and
// test runs keep away from the user's own settings that way). Tests that do not set it turn
// on QStandardPaths::setTestModeEnabled, which moves the default location to a test folder.
std::unique_ptr<QSettings> openLayoutSettings();

}  // namespace trainbench::gui
