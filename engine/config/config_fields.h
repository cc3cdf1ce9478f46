// The field table behind the config schema: one entry per key, with typed JSON get/set.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainbench/config_io.h"

namespace trainbench {

struct ConfigField {
    ConfigFieldInfo info;
    std::function<nlohmann::json(const RunConfig&)> get;
    // Throws ConfigError (with the dotted path) when the JSON value has the wrong type.
    std::function<void(RunConfig&, const nlohmann::json&)> set;
    std::string dottedPath() const { return info.section + "." + info.key; }
};

const std::vector<ConfigField>& configFields();
const ConfigField* findConfigField(const std::string& section, const std::string& key);

// The closest known name to `word` among `candidates` (edit distance), or "" if none is close.
std::string closestName(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace trainbench
