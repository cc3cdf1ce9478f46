// JSON reading and writing of run configs, and `section.key=value` overrides.
#include "trainbench/config_io.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config_fields.h"

namespace trainbench {
namespace {

using nlohmann::json;

const std::vector<std::string> kSections = {"model", "train", "data", "runtime", "target"};

std::vector<std::string> keysOf(const std::string& section) {
    std::vector<std::string> keys;
    for (const auto& field : configFields())
        if (field.info.section == section) keys.push_back(field.info.key);
    return keys;
}

[[noreturn]] void unknownKey(const std::string& section, const std::string& key, const std::string& origin) {
    std::string path = section.empty() ? key : section + "." + key;
    std::string message = origin + ": unknown key '" + path + "'";
    std::string guess = closestName(key, section.empty() ? kSections : keysOf(section));
    if (!guess.empty()) message += "; did you mean '" + (section.empty() ? guess : section + "." + guess) + "'?";
    else if (section.empty()) message += "; a run config has the sections model, train, data, runtime, target";
    else message += "; see docs/CONFIG.md for the keys of '" + section + "'";
    throw ConfigError(path, message);
}

void readSection(RunConfig& config, const std::string& section, const json& object, const std::string& origin) {
    if (!object.is_object())
        throw ConfigError(section, origin + ": '" + section + "' must be an object of keys, got " + object.dump(-1, ' ', false, json::error_handler_t::replace));
    for (const auto& [key, value] : object.items()) {
        const ConfigField* field = findConfigField(section, key);
        if (!field) unknownKey(section, key, origin);
        try {
            field->set(config, value);
        } catch (const ConfigError& e) {
            throw ConfigError(e.path(), origin + ": " + e.what());
        }
    }
}

bool looksLikeModelSection(const json& root) {
    for (const auto& [key, value] : root.items())
        if (findConfigField("model", key)) return true;
    return false;
}

json parseValue(const std::string& text) {
    try {
        return json::parse(text);
    } catch (const json::exception&) {
        // A bare word such as cosine or cuda:0 (or a number JSON cannot hold, 1e999): the
        // field's own type check then names it.
        return json(text);
    }
}

}  // namespace

RunConfig parseRunConfig(const std::string& json_text, const std::string& origin) {
    json root;
    try {
        root = json::parse(json_text);
    } catch (const json::parse_error& e) {
        throw ConfigError("", origin + ": not valid JSON (" + std::string(e.what()) +
                                  "); check for a missing comma or quote near the position given");
    } catch (const json::exception& e) {  // e.g. a number beyond a double's range
        throw ConfigError("", origin + ": cannot be read (" + std::string(e.what()) + "); write numbers a double can hold");
    }
    if (!root.is_object())
        throw ConfigError("", origin + ": a config must be a JSON object with sections model, train, data, runtime (and target)");

    RunConfig config;
    bool sectioned = false;
    for (const auto& section : kSections) sectioned = sectioned || root.contains(section);
    if (!sectioned && looksLikeModelSection(root)) {
        // A published DeepSeek config (flat ModelArgs keys): the model section alone.
        readSection(config, "model", root, origin);
        return config;
    }
    for (const auto& [key, value] : root.items()) {
        bool known = std::find(kSections.begin(), kSections.end(), key) != kSections.end();
        if (!known) unknownKey("", key, origin);
        if (key == "model" && value.is_string()) {
            throw ConfigError("model", origin + ": model must be an object of ModelArgs keys");
        }
        readSection(config, key, value, origin);
    }
    return config;
}

RunConfig loadRunConfigFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw ConfigError("", path + ": cannot open the config file; check the path (presets live in configs/)");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return parseRunConfig(buffer.str(), path);
}

std::string runConfigToJson(const RunConfig& config, int indent) {
    json root = json::object();
    for (const auto& section : kSections) root[section] = json::object();
    for (const auto& field : configFields()) root[field.info.section][field.info.key] = field.get(config);
    return root.dump(indent);
}

std::string mixtureSourceName(const DataMixtureSource& source) {
    if (!source.name.empty()) return source.name;
    std::filesystem::path path(source.path);
    if (path.filename().empty()) path = path.parent_path();  // "web/"
    return path.filename().string();
}

void applyConfigOverride(RunConfig& config, const std::string& assignment) {
    auto equals = assignment.find('=');
    auto dot = assignment.find('.');
    if (equals == std::string::npos || dot == std::string::npos || dot > equals)
        throw ConfigError("", "--set '" + assignment + "': write it as section.key=value, e.g. train.lr=1e-3");
    std::string section = assignment.substr(0, dot);
    std::string key = assignment.substr(dot + 1, equals - dot - 1);
    std::string value = assignment.substr(equals + 1);
    if (std::find(kSections.begin(), kSections.end(), section) == kSections.end())
        unknownKey("", section, "--set");
    const ConfigField* field = findConfigField(section, key);
    if (!field) unknownKey(section, key, "--set");
    json parsed = field->info.type == "string" || field->info.type == "choice" ? json(value) : parseValue(value);
    if (parsed.is_string()) {
        // The config is JSON text (stored with every run): its strings must be UTF-8.
        try {
            (void)parsed.dump();
        } catch (const json::type_error&) {
            throw ConfigError(section + "." + key, "--set " + section + "." + key +
                                                       ": the value is not valid UTF-8 text; write it in UTF-8 "
                                                       "(rename a file whose name is not)");
        }
    }
    try {
        field->set(config, parsed);
    } catch (const ConfigError& e) {
        throw ConfigError(e.path(), std::string("--set: ") + e.what());
    }
}

}  // namespace trainbench
