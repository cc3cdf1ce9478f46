// trainbench-cli: the headless front end (DESIGN.md section 5). Exit codes: 0 success,
// 2 invalid input, 3 the run failed, 130 interrupted.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "trainbench/config_io.h"
#include "trainbench/data_summary.h"
#include "trainbench/param_count.h"
#include "trainbench/training_session.h"
#include "trainbench/weights_io.h"

namespace {

using namespace trainbench;

constexpr int kExitInvalidInput = 2;
constexpr int kExitRunFailed = 3;
constexpr int kExitInterrupted = 130;

std::atomic<int> g_interrupts{0};
extern "C" void onInterrupt(int) { g_interrupts.fetch_add(1); }

RunConfig loadWithOverrides(const std::string& path, const std::vector<std::string>& overrides) {
    RunConfig config = loadRunConfigFile(path);
    for (const auto& assignment : overrides) applyConfigOverride(config, assignment);
    requireValidRunConfig(config);
    return config;
}

int commandParams(const std::string& path, bool as_json) {
    RunConfig config = loadRunConfigFile(path);
    ParamCount count = countParameters(config.model);
    if (as_json) {
        std::cout << nlohmann::json{{"total_params", count.total},
                                    {"activated_params", count.activated},
                                    {"state_dict_tensors", count.state_dict_tensors}}
                         .dump()
                  << "\n";
    } else {
        std::printf("total parameters      %lld (%.3f B)\n", (long long)count.total, count.total / 1e9);
        std::printf("activated parameters  %lld (%.3f B)\n", (long long)count.activated, count.activated / 1e9);
        std::printf("state-dict tensors    %lld\n", (long long)count.state_dict_tensors);
    }
    return 0;
}

void printStepLine(const std::map<std::string, double>& values, int64_t step, int64_t total_steps) {
    auto get = [&](const char* key) {
        auto it = values.find(key);
        return it == values.end() ? std::nan("") : it->second;
    };
    std::fprintf(stderr, "step %5lld/%lld  loss %.4f  lr %.3e  grad_norm %.3f  tokens/s %.0f\n", (long long)step,
                 (long long)total_steps, get("train/loss"), get("train/lr"), get("train/grad_norm"),
                 get("perf/tokens_per_s"));
}

int commandData(const std::string& path, const std::vector<std::string>& overrides, bool as_json) {
    RunConfig config = loadWithOverrides(path, overrides);
    DataSummary s = describeData(config);
    if (as_json) {
        std::cout << dataSummaryToJson(s) << "\n";
        return 0;
    }
    auto count = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("unbounded"); };
    std::printf("source                %s%s\n", s.source.c_str(), s.layout.empty() ? "" : (" (" + s.layout + ")").c_str());
    std::printf("vocab                 %lld\n", (long long)s.vocab_size);
    std::printf("train tokens          %s\n", count(s.train_tokens).c_str());
    std::printf("validation tokens     %s\n", count(s.val_tokens).c_str());
    std::printf("windows per epoch     train %s, validation %s (seq_len %lld + 1 tokens each)\n",
                count(s.train_windows).c_str(), count(s.val_windows).c_str(), (long long)s.seq_len);
    if (s.entropy_floor_nats) std::printf("entropy floor         %.6f nats/token\n", *s.entropy_floor_nats);
    return 0;
}

int commandRun(const std::string& path, const std::vector<std::string>& overrides) {
    RunConfig config = loadWithOverrides(path, overrides);
    TrainingSession session(config);
    auto inbox = session.bus().subscribe();
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    session.start();
    std::fprintf(stderr, "run %s: %s, m %lld x K %lld x W %lld = B %lld sequences of %lld tokens, %lld steps\n",
                 session.summary().run_id.c_str(), path.c_str(), (long long)config.train.micro_batch_size,
                 (long long)config.train.gradient_accumulation_steps, (long long)config.runtime.world_size,
                 (long long)config.globalBatch(), (long long)config.train.seq_len, (long long)config.train.steps);
    bool interrupted = false;
    auto report = [&](const BusBatch& batch) {
        std::map<int64_t, std::map<std::string, double>> steps;
        for (const auto& p : batch.points)
            if (p.step > 0) steps[p.step][p.key] = p.value;
        for (const auto& [step, values] : steps)
            if (values.count("train/loss")) printStepLine(values, step, config.train.steps);
        for (const auto& e : batch.events)
            if (e.kind != "status") std::fprintf(stderr, "[%s] %s\n", e.kind.c_str(), e.message.c_str());
    };
    while (!session.wait(std::chrono::milliseconds(0))) {
        report(inbox->waitAndDrain(std::chrono::milliseconds(200)));
        if (g_interrupts.load() > 0 && !interrupted) {
            interrupted = true;
            std::fprintf(stderr, "interrupted: stopping at the next micro-batch boundary\n");
            session.stop();
        }
    }
    report(inbox->drain());
    RunSummary summary = session.summary();
    if (interrupted && summary.status == RunStatus::Stopped) {
        std::cout << runSummaryToJson(summary) << "\n";
        return kExitInterrupted;
    }
    std::cout << runSummaryToJson(summary) << "\n";
    if (summary.status == RunStatus::Failed) {
        std::fprintf(stderr, "run failed: %s\n", summary.error.c_str());
        return kExitRunFailed;
    }
    return 0;
}

int commandInit(const std::string& path, const std::vector<std::string>& overrides, int64_t seed,
                const std::string& out) {
    RunConfig config = loadWithOverrides(path, overrides);
    writeInitialWeights(config, static_cast<uint64_t>(seed), out);
    std::cout << out << "\n";
    return 0;
}

int commandEval(const std::string& path, const std::vector<std::string>& overrides, const std::string& weights) {
    RunConfig config = loadWithOverrides(path, overrides);
    EvalResult result = evaluateWeightsFile(config, weights);
    std::cout << nlohmann::json{{"loss", result.loss}, {"tokens", result.tokens}, {"windows", result.windows}}.dump()
              << "\n";
    return 0;
}

// The config reference as Markdown (docs/CONFIG.md is generated from it).
int commandSchema() {
    std::string section;
    std::cout << "# Run config reference\n\nGenerated by `trainbench-cli schema`. A run config is a JSON object "
                 "with the sections below; every key is optional and takes the default shown by "
                 "`trainbench-cli schema` (the reference DeepSeek `ModelArgs` defaults for the model section).\n";
    for (const auto& field : configSchema()) {
        if (field.section != section) {
            section = field.section;
            std::cout << "\n## " << section << "\n\n| key | type | meaning |\n|---|---|---|\n";
        }
        std::string type = field.type;
        if (!field.choices.empty()) {
            type.clear();
            for (const auto& c : field.choices) type += (type.empty() ? "" : " \\| ") + ("`" + c + "`");
        }
        std::cout << "| `" << field.key << "` | " << type << " | " << field.help << " |\n";
    }
    std::cout << "\nDefaults of a full config: `trainbench-cli schema --defaults`.\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"trainbench-cli: train DeepSeek-style models with exact gradient accumulation"};
    app.require_subcommand(1);

    std::string config_path;
    std::vector<std::string> overrides;
    bool as_json = false;

    auto* params = app.add_subcommand("params", "Count parameters without allocating them");
    params->add_option("config", config_path, "Run config or published model config (JSON)")->required();
    params->add_flag("--json", as_json, "Print one JSON object");

    auto* data = app.add_subcommand("data", "Describe the data section: sizes, windows per epoch, loss floor");
    data->add_option("config", config_path, "Run config (JSON)")->required();
    data->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");
    data->add_flag("--json", as_json, "Print one JSON object");

    auto* run = app.add_subcommand("run", "Train a config; prints progress and a final JSON summary line");
    run->add_option("config", config_path, "Run config (JSON)")->required();
    run->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");

    std::string weights_path, out_path;
    int64_t seed = 0;
    auto* init = app.add_subcommand("init", "Write freshly initialised fp32 weights (reference names) to safetensors");
    init->add_option("config", config_path, "Run config or published model config (JSON)")->required();
    init->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");
    init->add_option("--seed", seed, "Initialisation seed")->default_val(0);
    init->add_option("--out", out_path, "Output .safetensors file")->required();

    auto* eval = app.add_subcommand("eval", "Mean token loss of a weights file on the config's validation data");
    eval->add_option("config", config_path, "Run config (JSON)")->required();
    eval->add_option("--checkpoint", weights_path, "model.safetensors file")->required();
    eval->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");

    bool defaults = false;
    auto* schema = app.add_subcommand("schema", "Print the config reference (Markdown), or --defaults as JSON");
    schema->add_flag("--defaults", defaults, "Print a complete default config as JSON");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : kExitInvalidInput;
    }

    try {
        if (params->parsed()) return commandParams(config_path, as_json);
        if (run->parsed()) return commandRun(config_path, overrides);
        if (data->parsed()) return commandData(config_path, overrides, as_json);
        if (init->parsed()) return commandInit(config_path, overrides, seed, out_path);
        if (eval->parsed()) return commandEval(config_path, overrides, weights_path);
        if (schema->parsed()) {
            if (defaults) {
                std::cout << runConfigToJson(RunConfig{}) << "\n";
                return 0;
            }
            return commandSchema();
        }
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return kExitInvalidInput;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return kExitRunFailed;
    }
    return 0;
}
