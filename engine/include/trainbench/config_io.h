// Reading, writing, overriding and validating run configs as JSON text.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

// A config problem, tied to a dotted path (`train.micro_batch_size`) or a file.
// what() is the full message: path, value, rule and a fix.
class ConfigError : public std::runtime_error {
public:
    ConfigError(std::string path, const std::string& message)
        : std::runtime_error(message), path_(std::move(path)) {}
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

struct ConfigIssue {
    std::string path;     // dotted path of the offending field
    std::string message;  // complete sentence naming the field, value, rule and fix
};

// Parses a run config from JSON text. `origin` names the source in messages (a file name).
// A JSON object without the four sections but with model keys is taken as a model section
// (a published DeepSeek config file). Throws ConfigError on syntax, type or unknown keys;
// does not run the cross-field validation (see validateRunConfig).
RunConfig parseRunConfig(const std::string& json_text, const std::string& origin = "config");

// Reads a file and parses it. Throws ConfigError naming the file.
RunConfig loadRunConfigFile(const std::string& path);

// The complete config as indented JSON (every field, defaults included).
std::string runConfigToJson(const RunConfig& config, int indent = 2);

// A data.sources entry's name: its own, else its path's last component ("web/" -> "web",
// "code.jsonl" -> "code.jsonl").
std::string mixtureSourceName(const DataMixtureSource& source);

// Applies `section.key=value` (value parsed as JSON, else as a string). Throws ConfigError.
void applyConfigOverride(RunConfig& config, const std::string& assignment);

// Every rule violated by the config, in field order; empty when valid.
std::vector<ConfigIssue> validateRunConfig(const RunConfig& config);

// Whether the issue is the data section's. Commands that read no data (params, plan) and the
// window (parameter counts, memory plans) go on with a config whose only issues are these: a
// published model config has no data section that could train it.
bool isDataIssue(const ConfigIssue& issue);

// Throws ConfigError for the first issue of validateRunConfig.
void requireValidRunConfig(const RunConfig& config);

// One field of the schema, for forms and documentation.
struct ConfigFieldInfo {
    std::string section;  // model | train | data | runtime
    std::string key;
    std::string type;     // int | float | bool | string | choice
    std::vector<std::string> choices;  // for type == choice
    std::string help;
    std::string default_json;  // the default value as JSON text (null: unset)
    // A key of the reference's ModelArgs that only its inference code reads (the KV-cache rows,
    // the checkpoint's storage format): accepted and kept, unused in training.
    bool inference_only = false;
};
const std::vector<ConfigFieldInfo>& configSchema();

}  // namespace trainbench

// Floor: config/ (engine/README.md)
