// Where the workbench remembers its window layout between sessions (geometry, splitters, the open tab).
#include "app/layout_settings.h"

#include <QString>

namespace trainbench::gui {

std::unique_ptr<QSettings> openLayoutSettings() {
    const QString file = qEnvironmentVariable("TRAINBENCH_SETTINGS");
    if (!file.isEmpty()) return std::make_unique<QSettings>(file, QSettings::IniFormat);
    return std::make_unique<QSettings>(QStringLiteral("Trainbench"), QStringLiteral("Trainbench"));
}

}  // namespace trainbench::gui
