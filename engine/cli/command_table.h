// How trainbench-cli's command groups plug into main(): each group declares its subcommands
// with their options beside their actions, and registers the action to run when its
// subcommand is given. Exit codes (docs/design/run_contract.md section 5): 0 success, 2 invalid
// input, 3 the run failed, 130 interrupted.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace trainbench::cli {

constexpr int kExitInvalidInput = 2;
constexpr int kExitRunFailed = 3;
constexpr int kExitInterrupted = 130;

class CommandTable {
public:
    // `action` runs when `command` was given. Register a subcommand after its parent: the
    // deepest one given wins (`runs tag` over `runs`).
    void add(CLI::App* command, std::function<int()> action) { entries_.emplace_back(command, std::move(action)); }
    // The action of the subcommand given; empty when none.
    std::function<int()> chosen() const {
        std::function<int()> action;
        for (const auto& [command, act] : entries_)
            if (command->parsed()) action = act;
        return action;
    }

private:
    std::vector<std::pair<CLI::App*, std::function<int()>>> entries_;
};

// params, data, config, schema, init, eval, noise-scale (model_commands.cpp)
void addModelCommands(CLI::App& app, CommandTable& table);
// run (with --grid and --check-rendezvous), resume (run_commands.cpp)
void addRunCommands(CLI::App& app, CommandTable& table);
// runs (tag, note), export (store_commands.cpp)
void addStoreCommands(CLI::App& app, CommandTable& table);
// export-hf (hf_commands.cpp)
void addHuggingFaceCommands(CLI::App& app, CommandTable& table);
// plan, explore (plan_commands.cpp)
void addPlanCommands(CLI::App& app, CommandTable& table);
// generate (generate_commands.cpp)
void addGenerateCommands(CLI::App& app, CommandTable& table);

}  // namespace trainbench::cli
