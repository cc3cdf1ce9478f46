#include "common/workbench_settings.h"

namespace trainbench::gui {

std::unique_ptr<QSettings> openWorkbenchSettings() {
    const QString file = qEnvironmentVariable("TRAINBENCH_SETTINGS");
    if (!file.isEmpty()) return std::make_unique<QSettings>(file, QSettings::IniFormat);
    return std::make_unique<QSettings>(QStringLiteral("Trainbench"), QStringLiteral("Trainbench"));
}

}  // namespace trainbench::gui
