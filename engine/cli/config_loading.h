// What every command group reads the same way: a config with --set applied and validated, the
// run store's folder, and the options that say so.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "trainbench/run_config.h"

namespace trainbench::cli {

// The file, the overrides in order, every section validated (ConfigError naming the field).
RunConfig loadWithOverrides(const std::string& path, const std::vector<std::string>& overrides);
// The same with the data section unchecked: commands that read no data (params, plan,
// export-hf) take a published model config without a data section that could train it.
RunConfig loadWithoutData(const std::string& path, const std::vector<std::string>& overrides);

// The store a command uses: --store, else TRAINBENCH_STORE, else the XDG data folder.
std::string storeFolder(const std::string& option);
// "configs/tiny.json" -> "tiny".
std::string fileStem(const std::string& path);
// Written beside `path` and renamed over it: a reader never sees half a file (errors name --out).
void writeTextFileAtomically(const std::string& path, const std::string& text);

// The options most commands share, declared alike everywhere.
void addConfigArgument(CLI::App* command, std::string& path, const std::string& help = "Run config (JSON)");
void addOverridesOption(CLI::App* command, std::vector<std::string>& overrides);
void addStoreOption(CLI::App* command, std::string& store);
void addJsonFlag(CLI::App* command, bool& as_json, const std::string& help = "Print one JSON object");

}  // namespace trainbench::cli
