// The shared loading and options of trainbench-cli's commands.
#include "cli/config_loading.h"

#include <cstdio>
#include <fstream>

#include "trainbench/config_io.h"
#include "trainbench/run_store.h"

namespace trainbench::cli {

RunConfig loadWithOverrides(const std::string& path, const std::vector<std::string>& overrides) {
    RunConfig config = loadRunConfigFile(path);
    for (const auto& assignment : overrides) applyConfigOverride(config, assignment);
    requireValidRunConfig(config);
    return config;
}

RunConfig loadWithoutData(const std::string& path, const std::vector<std::string>& overrides) {
    RunConfig config = loadRunConfigFile(path);
    for (const auto& assignment : overrides) applyConfigOverride(config, assignment);
    for (const auto& issue : validateRunConfig(config))
        if (!isDataIssue(issue)) throw ConfigError(issue.path, issue.message);
    return config;
}

std::string storeFolder(const std::string& option) { return option.empty() ? RunStore::defaultFolder() : option; }

std::string fileStem(const std::string& path) {
    auto slash = path.find_last_of('/');
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    auto dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(0, dot);
}

void writeTextFileAtomically(const std::string& path, const std::string& text) {
    const std::string partial = path + ".partial";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        out << text;
        out.flush();
        if (!out) {
            std::remove(partial.c_str());
            throw ConfigError("--out", path + ": cannot be written; check the folder exists and is writable");
        }
    }
    if (std::rename(partial.c_str(), path.c_str()) != 0) {
        std::remove(partial.c_str());
        throw ConfigError("--out", path + ": cannot be written (rename failed)");
    }
}

void addConfigArgument(CLI::App* command, std::string& path, const std::string& help) {
    command->add_option("config", path, help)->required();
}

void addOverridesOption(CLI::App* command, std::vector<std::string>& overrides) {
    command->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");
}

void addStoreOption(CLI::App* command, std::string& store) {
    command->add_option("--store", store, "Run store folder (default: $TRAINBENCH_STORE or ~/.local/share/trainbench)");
}

void addJsonFlag(CLI::App* command, bool& as_json, const std::string& help) { command->add_flag("--json", as_json, help); }

}  // namespace trainbench::cli
