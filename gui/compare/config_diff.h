// Config diff: the dotted keys of run configs side by side, optionally only those whose values differ.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <QString>
#include <QStringList>

namespace trainbench::gui {

// A config's JSON text as dotted keys (`train.lr`) and value texts: strings bare, numbers with
// up to 15 significant digits (3e-4 reads 0.0003), arrays as compact JSON. Not a JSON object: {}.
std::map<QString, QString> flattenConfigJson(const std::string& json_text);

struct ConfigDiffRow {
    QString key;
    QStringList values;  // one per config, in the order given; empty where a config lacks the key
};

// Every key of any of `config_jsons`, sorted; with `all_keys` false only those whose values
// are not all equal (a key missing from one config differs).
std::vector<ConfigDiffRow> configDiff(const std::vector<std::string>& config_jsons, bool all_keys);

}  // namespace trainbench::gui
