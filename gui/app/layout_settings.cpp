// Where and how the workbench remembers its window layout between sessions (geometry, docks, splitters, the open tab).
#include "app/layout_settings.h"

#include <QMainWindow>
#include <QSplitter>
#include <QString>
#include <QTabWidget>

#include "common/workbench_settings.h"

namespace trainbench::gui {

namespace {

const char* const kGeometryKey = "mainWindow/geometry";
const char* const kStateKey = "mainWindow/state";
const char* const kMainSplitterKey = "mainWindow/mainSplitter";
const char* const kConfigureSplitterKey = "mainWindow/configureSplitter";
// The open tab by its page's object name, which survives tabs being added or reordered.
const char* const kTabKey = "mainWindow/tab";

}  // namespace

std::unique_ptr<QSettings> openLayoutSettings() { return openWorkbenchSettings(); }

void saveWindowLayout(const WindowLayout& layout) {
    const std::unique_ptr<QSettings> settings = openLayoutSettings();
    settings->setValue(QLatin1String(kGeometryKey), layout.window->saveGeometry());
    settings->setValue(QLatin1String(kStateKey), layout.window->saveState());
    settings->setValue(QLatin1String(kMainSplitterKey), layout.main_splitter->saveState());
    settings->setValue(QLatin1String(kConfigureSplitterKey), layout.configure_splitter->saveState());
    settings->setValue(QLatin1String(kTabKey), layout.tabs->currentWidget()->objectName());
}

bool restoreWindowLayout(const WindowLayout& layout) {
    const std::unique_ptr<QSettings> settings = openLayoutSettings();
    layout.window->restoreGeometry(settings->value(QLatin1String(kGeometryKey)).toByteArray());
    layout.window->restoreState(settings->value(QLatin1String(kStateKey)).toByteArray());
    layout.main_splitter->restoreState(settings->value(QLatin1String(kMainSplitterKey)).toByteArray());
    layout.configure_splitter->restoreState(settings->value(QLatin1String(kConfigureSplitterKey)).toByteArray());
    const QString tab = settings->value(QLatin1String(kTabKey)).toString();
    bool restored_tab = false;
    for (int i = 0; i < layout.tabs->count() && !tab.isEmpty(); ++i) {
        if (layout.tabs->widget(i)->objectName() == tab) {
            layout.tabs->setCurrentIndex(i);
            restored_tab = true;
        }
    }
    return restored_tab;
}

}  // namespace trainbench::gui
