// Where and how the workbench remembers its window layout between sessions (geometry, docks, splitters, the open tab).
#pragma once

#include <memory>

#include <QSettings>

class QMainWindow;
class QSplitter;
class QTabWidget;

namespace trainbench::gui {

// The settings of organisation "Trainbench", application "Trainbench"; or, when the
// environment variable TRAINBENCH_SETTINGS names a file, that INI file instead (scripts and
// test runs keep away from the user's own settings that way). Tests that do not set it turn
// on QStandardPaths::setTestModeEnabled, which moves the default location to a test folder.
std::unique_ptr<QSettings> openLayoutSettings();

// The parts of a window whose layout is remembered.
struct WindowLayout {
    QMainWindow* window = nullptr;  // its geometry and its docks
    QSplitter* main_splitter = nullptr;
    QSplitter* configure_splitter = nullptr;
    QTabWidget* tabs = nullptr;  // the open tab, by its page's object name
};

// Writes `layout` to openLayoutSettings().
void saveWindowLayout(const WindowLayout& layout);
// Reads back what saveWindowLayout wrote, each part on its own: a missing or damaged value
// leaves that part as built. False when no tab was remembered (or it no longer exists).
bool restoreWindowLayout(const WindowLayout& layout);

}  // namespace trainbench::gui
