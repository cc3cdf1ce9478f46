// ConfigEdit: one change a view asks the window to make to its config: the fields it sets, as `--set` writes them, and the name of its undo step.
#include "common/config_edit.h"

#include <QByteArray>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>

#include "trainbench/config_io.h"

namespace trainbench::gui {

namespace {

// The config as the engine writes it: {section: {key: value}}.
QJsonObject configObject(const RunConfig& config) {
    return QJsonDocument::fromJson(QByteArray::fromStdString(runConfigToJson(config, /*indent=*/-1))).object();
}

// How `--set` takes `value` for a field of `type`: text bare (the engine reads a text field's
// value as it is), anything else as its JSON: integers exactly, numbers in the shortest text that
// reads back to the same double.
std::string assignedText(const QJsonValue& value, const std::string& type) {
    if ((type == "string" || type == "choice") && value.isString()) return value.toString().toStdString();
    const QByteArray wrapped = QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact);
    return wrapped.mid(1, wrapped.size() - 2).toStdString();  // without the array's brackets
}

}  // namespace

ConfigEdit configEditBetween(const RunConfig& before, const RunConfig& after, const QString& description) {
    ConfigEdit edit;
    edit.description = description;
    const QJsonObject old_values = configObject(before);
    const QJsonObject new_values = configObject(after);
    for (const ConfigFieldInfo& field : configSchema()) {
        const QString section = QString::fromStdString(field.section);
        const QString key = QString::fromStdString(field.key);
        const QJsonValue new_value = new_values.value(section).toObject().value(key);
        if (new_value == old_values.value(section).toObject().value(key)) continue;
        edit.assignments.push_back(field.section + "." + field.key + "=" + assignedText(new_value, field.type));
    }
    return edit;
}

RunConfig withEdit(RunConfig config, const ConfigEdit& edit) {
    for (const std::string& assignment : edit.assignments) applyConfigOverride(config, assignment);
    return config;
}

std::optional<std::string> editedValue(const ConfigEdit& edit, std::string_view field) {
    for (const std::string& assignment : edit.assignments) {
        const std::string_view text(assignment);
        if (text.size() > field.size() && text.substr(0, field.size()) == field && text[field.size()] == '=')
            return std::string(text.substr(field.size() + 1));
    }
    return std::nullopt;
}

}  // namespace trainbench::gui
