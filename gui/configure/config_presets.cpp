// The built-in config presets the Configure view offers: the trainable presets and the published DeepSeek configs.
#include "configure/config_presets.h"

#include <QFile>

#include "trainbench/config_io.h"

// Q_INIT_RESOURCE must be called outside any namespace. A static library's resources are not
// registered by themselves: nothing references their object file, so the linker drops it.
static void registerPresetResources() {
    Q_INIT_RESOURCE(presets);
}

namespace trainbench::gui {

const QVector<ConfigPreset>& configPresets() {
    static const QVector<ConfigPreset> presets{
        {QObject::tr("tiny: trains in seconds on a CPU"), QStringLiteral("configs/tiny.json")},
        {QObject::tr("tiny, V2 style: softmax router, full-rank queries"), QStringLiteral("configs/tiny_v2.json")},
        {QObject::tr("small"), QStringLiteral("configs/small.json")},
        {QObject::tr("medium"), QStringLiteral("configs/medium.json")},
        {QObject::tr("DeepSeek-V2-Lite 16B (published)"), QStringLiteral("configs/deepseek/config_16B.json")},
        {QObject::tr("DeepSeek-V2 236B (published)"), QStringLiteral("configs/deepseek/config_236B.json")},
        {QObject::tr("DeepSeek-V3 671B (published)"), QStringLiteral("configs/deepseek/config_671B.json")},
        {QObject::tr("DeepSeek-V3.1 671B (published)"), QStringLiteral("configs/deepseek/config_v3.1.json")},
    };
    return presets;
}

RunConfig loadConfigPreset(const ConfigPreset& preset) {
    static const bool registered = [] {
        registerPresetResources();
        return true;
    }();
    Q_UNUSED(registered);
    QFile file(QStringLiteral(":/presets/") + preset.file);
    if (!file.open(QIODevice::ReadOnly))
        throw ConfigError("", preset.file.toStdString() + ": the preset is missing from the program's resources");
    return parseRunConfig(file.readAll().toStdString(), preset.file.toStdString());
}

}  // namespace trainbench::gui
