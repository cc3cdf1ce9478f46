// trainbench-cli: the headless front end (docs/design/run_contract.md section 5). Each command
// group declares its subcommands, options and actions in its own file (command_table.h); this
// file parses, runs the one given and turns errors into exit codes: 2 invalid input (a
// ConfigError or StoreError, naming the field or file), 3 the run failed, 130 interrupted.
#include <unistd.h>

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/command_table.h"
#include "trainbench/config_io.h"
#include "trainbench/run_store.h"
#include "trainbench/tokenize_progress.h"

namespace {

// A text corpus being tokenised: one line on stderr, redrawn in place on a terminal.
void showTokenizeProgress(const std::string& what, int64_t done, int64_t total) {
    static const bool terminal = ::isatty(STDERR_FILENO);
    static int last_decile = -1;
    const double fraction = total > 0 ? double(done) / double(total) : 1.0;
    if (!terminal) {
        const int decile = static_cast<int>(fraction * 10);
        if (decile == last_decile) return;
        last_decile = done >= total ? -1 : decile;
    }
    const int width = 30, filled = static_cast<int>(fraction * width);
    std::fprintf(stderr, "%scaching %s [%s%s] %3.0f%% of %.1f MB%s", terminal ? "\r" : "", what.c_str(),
                 std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), fraction * 100, total / 1e6,
                 terminal && done < total ? "" : "\n");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace trainbench::cli;
    trainbench::setTokenizeProgress(showTokenizeProgress);
    CLI::App app{"trainbench-cli: train DeepSeek-style models with exact gradient accumulation"};
    app.require_subcommand(1);
    CommandTable table;
    addRunCommands(app, table);
    addStoreCommands(app, table);
    addModelCommands(app, table);
    addHuggingFaceCommands(app, table);
    addPlanCommands(app, table);
    addGenerateCommands(app, table);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : kExitInvalidInput;
    }
    try {
        if (const auto action = table.chosen()) return action();
    } catch (const trainbench::ConfigError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return kExitInvalidInput;
    } catch (const trainbench::StoreError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return kExitInvalidInput;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return kExitRunFailed;
    }
    return 0;
}
