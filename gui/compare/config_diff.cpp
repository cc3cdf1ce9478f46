// Config diff: the dotted keys of run configs side by side, optionally only those whose values differ.
#include "compare/config_diff.h"

#include <set>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>

namespace trainbench::gui {

namespace {

QString valueText(const QJsonValue& value) {
    switch (value.type()) {
    case QJsonValue::Bool: return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::Double: return QString::number(value.toDouble(), 'g', 15);
    case QJsonValue::String: return value.toString();
    case QJsonValue::Array: return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    case QJsonValue::Null: return QStringLiteral("null");
    default: return QString();
    }
}

void flatten(const QJsonObject& object, const QString& prefix, std::map<QString, QString>& out) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        const QString key = prefix.isEmpty() ? it.key() : prefix + QLatin1Char('.') + it.key();
        if (it.value().isObject()) flatten(it.value().toObject(), key, out);
        else out[key] = valueText(it.value());
    }
}

}  // namespace

std::map<QString, QString> flattenConfigJson(const std::string& json_text) {
    std::map<QString, QString> out;
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(json_text));
    if (document.isObject()) flatten(document.object(), QString(), out);
    return out;
}

std::vector<ConfigDiffRow> configDiff(const std::vector<std::string>& config_jsons, bool all_keys) {
    std::vector<std::map<QString, QString>> configs;
    std::set<QString> keys;
    for (const std::string& json : config_jsons) {
        configs.push_back(flattenConfigJson(json));
        for (const auto& [key, value] : configs.back()) keys.insert(key);
    }
    std::vector<ConfigDiffRow> rows;
    for (const QString& key : keys) {
        ConfigDiffRow row{key, {}};
        bool differs = false;
        for (const auto& config : configs) {
            const auto found = config.find(key);
            // A missing key differs from any value, including the empty string.
            const QString value = found == config.end() ? QString() : found->second;
            if (found == config.end() || (!row.values.isEmpty() && value != row.values.front())) differs = true;
            row.values << value;
        }
        if (all_keys || differs) rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace trainbench::gui
