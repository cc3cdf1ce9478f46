// The built-in config presets the Configure view offers: the trainable presets and the published DeepSeek configs.
#pragma once

#include <QString>
#include <QVector>

#include "trainbench/run_config.h"

namespace trainbench::gui {

struct ConfigPreset {
    QString label;  // what the preset list shows
    QString file;   // its path in the source tree (configs/...), also the name a loaded preset is shown under
};

// In the order the list shows them: smallest trainable first, then the published models.
const QVector<ConfigPreset>& configPresets();

// Parses the preset's JSON, compiled into the program from configs/. Throws ConfigError.
RunConfig loadConfigPreset(const ConfigPreset& preset);

}  // namespace trainbench::gui
