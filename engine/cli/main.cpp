// trainbench-cli: the headless front end (DESIGN.md section 5). Exit codes: 0 success,
// 2 invalid input, 3 the run failed, 130 interrupted.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/plan_commands.h"
#include "trainbench/metric_keys.h"
#include "trainbench/batch_schedule.h"
#include "trainbench/batch_explorer.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_grid.h"
#include "trainbench/config_io.h"
#include "trainbench/data_summary.h"
#include "trainbench/hf_interop.h"
#include "trainbench/tokenize_progress.h"
#include "trainbench/param_count.h"
#include "trainbench/training_session.h"
#include "trainbench/process_launch.h"
#include "trainbench/run_recorder.h"
#include "trainbench/run_store.h"
#include "trainbench/weights_io.h"

namespace {

using namespace trainbench;

constexpr int kExitInvalidInput = 2;
constexpr int kExitRunFailed = 3;
constexpr int kExitInterrupted = 130;

std::atomic<int> g_interrupts{0};
// The first Ctrl-C stops at the next micro-batch boundary; a second one leaves at once.
extern "C" void onInterrupt(int) {
    if (g_interrupts.fetch_add(1) >= 1) _exit(kExitInterrupted);
}

RunConfig loadWithOverrides(const std::string& path, const std::vector<std::string>& overrides) {
    RunConfig config = loadRunConfigFile(path);
    for (const auto& assignment : overrides) applyConfigOverride(config, assignment);
    requireValidRunConfig(config);
    return config;
}

// Commands that read no data (params, plan) check every section but the data one: a
// published model config is valid for them without a data section that could train it (its
// vocabulary is too large for the synthetic source).
RunConfig loadWithoutData(const std::string& path, const std::vector<std::string>& overrides) {
    RunConfig config = loadRunConfigFile(path);
    for (const auto& assignment : overrides) applyConfigOverride(config, assignment);
    for (const auto& issue : validateRunConfig(config))
        if (!isDataIssue(issue)) throw ConfigError(issue.path, issue.message);
    return config;
}

int commandParams(const std::string& path, bool as_json) {
    RunConfig config = loadWithoutData(path, {});
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

// One metric of a step's values, NaN when the step did not log it.
double valueOf(const std::map<std::string, double>& values, const char* key) {
    auto it = values.find(key);
    return it == values.end() ? std::nan("") : it->second;
}

void printStepLine(const std::map<std::string, double>& values, int64_t step, int64_t total_steps) {
    auto get = [&](const char* key) { return valueOf(values, key); };
    std::fprintf(stderr, "step %5lld/%lld  loss %.4f  lr %.3e  grad_norm %.3f  tokens/s %.0f\n", (long long)step,
                 (long long)total_steps, get(metric::kLoss), get(metric::kLearningRate), get(metric::kGradNorm),
                 get(metric::kTokensPerSecond));
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
    if (!s.tokenizer.empty()) std::printf("tokenizer             %s\n", s.tokenizer.c_str());
    if (s.tokens_per_byte) std::printf("tokens per byte       %.4f\n", *s.tokens_per_byte);
    return 0;
}

// The store a command uses: --store, else TRAINBENCH_STORE, else the XDG data folder.
std::string storeFolder(const std::string& option) { return option.empty() ? RunStore::defaultFolder() : option; }

std::string fileStem(const std::string& path) {
    auto slash = path.find_last_of('/');
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    auto dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(0, dot);
}

// On a terminal: one self-overwriting progress line with ETA; otherwise one line per step.
class ProgressPrinter {
public:
    explicit ProgressPrinter(int64_t total_steps) : total_(total_steps), terminal_(::isatty(STDERR_FILENO) == 1) {}
    void step(int64_t step, const std::map<std::string, double>& values, double elapsed_s) {
        if (!terminal_) {
            printStepLine(values, step, total_);
            return;
        }
        auto get = [&](const char* key) { return valueOf(values, key); };
        const double eta = step > 0 ? elapsed_s / double(step) * double(total_ - step) : 0;
        const int width = 24, filled = total_ > 0 ? static_cast<int>(width * step / total_) : 0;
        std::string bar(filled, '#');
        bar.append(width - filled, '.');
        std::fprintf(stderr, "\r[%s] %lld/%lld  loss %.4f  %.0f tok/s  ETA %.0fs   ", bar.c_str(), (long long)step,
                     (long long)total_, get(metric::kLoss), get(metric::kTokensPerSecond), eta);
        std::fflush(stderr);
        dirty_ = true;
    }
    void message(const std::string& text) {
        endLine();
        std::fprintf(stderr, "%s\n", text.c_str());
    }
    void endLine() {
        if (dirty_) std::fprintf(stderr, "\n");
        dirty_ = false;
    }

private:
    int64_t total_;
    bool terminal_;
    bool dirty_ = false;
};

// Drives a started session to its end: progress, Ctrl-C, the store's final status, the summary.
// `recorder` is null on a launched rank other than 0: only global rank 0 writes the store.
int trainToEnd(TrainingSession& session, RunRecorder* recorder, const RunConfig& config, const std::string& label) {
    auto inbox = session.bus().subscribe();
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    session.start();
    const BatchSchedule schedule(config);
    std::fprintf(stderr, "run %s (%s): m %lld x K %lld x W %lld = B %lld sequences of %lld tokens, %s%lld steps%s\n",
                 session.summary().run_id.c_str(), label.c_str(), (long long)config.train.micro_batch_size,
                 (long long)config.train.gradient_accumulation_steps, (long long)config.runtime.world_size,
                 (long long)config.globalBatch(), (long long)config.train.seq_len, schedule.adapts() ? "at most " : "",
                 (long long)schedule.plannedSteps(), schedule.adapts() ? " (the batch grows with the critical batch)" : "");
    ProgressPrinter progress(schedule.plannedSteps());
    bool interrupted = false;
    auto report = [&](const BusBatch& batch) {
        std::map<int64_t, std::map<std::string, double>> steps;
        std::map<int64_t, double> times;
        for (const auto& p : batch.points)
            if (p.step > 0) {
                steps[p.step][p.key] = p.value;
                times[p.step] = p.wall_time;
            }
        for (const auto& [step, values] : steps)
            if (values.count(metric::kLoss)) progress.step(step, values, times[step]);
        for (const auto& e : batch.events)
            if (e.kind != "status") progress.message("[" + e.kind + "] " + e.message);
    };
    while (!session.wait(std::chrono::milliseconds(0))) {
        report(inbox->waitAndDrain(std::chrono::milliseconds(200)));
        if (g_interrupts.load() > 0 && !interrupted) {
            interrupted = true;
            progress.message("interrupted: stopping at the next micro-batch boundary (a checkpoint is written)");
            session.stop();
        }
    }
    report(inbox->drain());
    progress.endLine();
    RunSummary summary = session.summary();
    if (recorder) {
        try {
            recorder->finish(summary, interrupted);
        } catch (const std::exception& e) {  // the run is over either way: report it
            std::fprintf(stderr, "warning: the run store could not record the end of the run: %s\n", e.what());
        }
        if (!recorder->error().empty())
            std::fprintf(stderr, "warning: the run store lost points: %s\n", recorder->error().c_str());
    }
    std::string line = runSummaryToJson(summary);
    if (interrupted && summary.status == RunStatus::Stopped) {
        // DESIGN.md section 5: a run ended by Ctrl-C reports `interrupted`.
        auto json = nlohmann::json::parse(line);
        json["status"] = "interrupted";
        line = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    std::cout << line << "\n";
    if (interrupted && summary.status == RunStatus::Stopped) return kExitInterrupted;
    if (summary.status == RunStatus::Failed) {
        std::fprintf(stderr, "run failed: %s\n", summary.error.c_str());
        return kExitRunFailed;
    }
    return 0;
}

// Launchers (torchrun --no-python, Slurm) start one process per rank and say so in the
// environment: such a process runs its one rank, the launcher's world size is the run's, and
// only global rank 0 writes the store. Returns nothing for a plain start.
std::optional<ProcessLaunch> launchedRank(RunConfig& config) {
    auto launch = processLaunchFromEnvironment();
    if (launch && config.runtime.world_size == 1) config.runtime.world_size = launch->world_size;
    return launch;
}

// Only global rank 0 of a launch writes the store.
bool recordsHere(const std::optional<ProcessLaunch>& launch) { return !launch || launch->rank == 0; }

// One run, or with --grid every point of the grid one after another (all of them checked
// before the first starts). The exit code is the worst: 130 when interrupted (the rest do
// not start), else 3 when any failed.
int commandRun(const std::string& path, const std::vector<std::string>& overrides, const std::string& store_option,
               const std::string& run_name, const std::string& explored_path, const std::vector<std::string>& grid,
               bool free_global_batch) {
    RunConfig base = loadWithOverrides(path, overrides);
    const std::optional<ProcessLaunch> launch = launchedRank(base);
    if (launch && !grid.empty())
        throw ConfigError("--grid", "--grid runs its points one after another in one process; under " +
                                        launch->launcher + " start one launch per point instead");
    const std::string name = run_name.empty() ? fileStem(path) : run_name;
    std::vector<std::pair<std::string, RunConfig>> jobs;
    if (grid.empty()) {
        jobs.emplace_back(name, base);
    } else {
        std::vector<GridAxis> axes;
        for (const std::string& text : grid) axes.push_back(parseGridAxis(text));
        for (GridPoint& point : expandConfigGrid(base, axes, !free_global_batch))
            jobs.emplace_back(name + " " + point.label(), std::move(point.config));
    }
    const std::string folder = storeFolder(store_option);
    std::optional<ExploredBest> explored_best;
    if (!explored_path.empty()) explored_best = readExploredBest(explored_path);
    int worst = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        const auto& [job_name, config] = jobs[i];
        if (jobs.size() > 1) std::fprintf(stderr, "grid run %zu of %zu: %s\n", i + 1, jobs.size(), job_name.c_str());
        SessionOptions options;
        options.explored_best = explored_best;
        options.run_id = generateRunId();
        options.checkpoint_dir = RunStore(folder).checkpointFolder(options.run_id);
        options.launch = launch;
        TrainingSession session(config, options);
        std::optional<RunRecorder> recorder;
        if (recordsHere(launch)) recorder.emplace(folder, session, job_name);
        const int code = trainToEnd(session, recorder ? &*recorder : nullptr, config, job_name + ", " + path);
        if (code == kExitInterrupted) return code;
        worst = std::max(worst, code);
    }
    return worst;
}

// `run --check-rendezvous`: the launch's rendezvous and nothing else (runtime.comm_timeout_s
// bounds the wait).
int commandCheckRendezvous(const std::string& path, const std::vector<std::string>& overrides) {
    RunConfig config = loadWithOverrides(path, overrides);
    const std::optional<ProcessLaunch> launch = launchedRank(config);
    if (!launch)
        throw ConfigError("--check-rendezvous", "--check-rendezvous checks a launch: start this command through torchrun "
                                                "(--nproc-per-node N ... --no-python) or srun, one process per rank");
    std::printf("%s\n", checkRendezvous(*launch, config.runtime.comm_timeout_s).c_str());
    return 0;
}

int commandResume(const std::string& run_id, const std::vector<std::string>& overrides, const std::string& store_option) {
    const std::string folder = storeFolder(store_option);
    RunStore store(folder);
    auto run = store.findRun(run_id);
    if (!run)
        throw ConfigError("", "run '" + run_id + "' is not in the store " + store.path() +
                                  "; list runs with `trainbench-cli runs`");
    if (run->status == "running")
        throw ConfigError("", "run '" + run_id + "' is still running (its owner process is alive); stop it first");
    RunConfig config = parseRunConfig(run->config_json, "the stored config of run " + run_id);
    // Extending a run (more steps, another schedule) is a resume with overrides; the session
    // refuses changes the checkpoint cannot follow.
    for (const auto& assignment : overrides) applyConfigOverride(config, assignment);
    // Checked with or without overrides: a stored config may predate a rule, or the store may
    // have been edited by hand.
    requireValidRunConfig(config);
    std::vector<std::string> skipped;
    SessionOptions options;
    options.run_id = run_id;
    options.checkpoint_dir = store.checkpointFolder(run_id);
    // run->steps is the last step whose points the store holds: a checkpoint written after it
    // (the process killed before its next commit) would leave those steps without points.
    auto checkpoint = checkpointToResume(options.checkpoint_dir, skipped, run->steps);
    for (const auto& why : skipped) std::fprintf(stderr, "skipping a checkpoint: %s\n", why.c_str());
    if (!checkpoint)
        throw ConfigError("", "run '" + run_id + "' has no valid checkpoint in " + options.checkpoint_dir +
                                  "; it cannot be resumed (start it again with `trainbench-cli run`)");
    if (checkpoint->step > run->steps)
        std::fprintf(stderr, "the store holds points up to step %lld only: steps %lld to %lld will have none\n",
                     (long long)run->steps, (long long)run->steps + 1, (long long)checkpoint->step);
    options.resume_from = checkpoint->path;
    options.launch = launchedRank(config);
    TrainingSession session(config, options);
    std::optional<RunRecorder> recorder;
    if (recordsHere(options.launch)) recorder.emplace(folder, session, checkpoint->step);
    std::fprintf(stderr, "resuming %s from step %lld (%s)\n", run_id.c_str(), (long long)checkpoint->step,
                 checkpoint->path.c_str());
    return trainToEnd(session, recorder ? &*recorder : nullptr, config, run->name + ", resumed");
}

int commandRuns(const std::string& store_option, bool as_json) {
    RunStore store(storeFolder(store_option));
    auto runs = store.listRuns();
    if (as_json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& r : runs) {
            nlohmann::json row = {{"run_id", r.run_id},
                                  {"name", r.name},
                                  {"status", r.status},
                                  {"steps", r.steps},
                                  {"final_loss", r.final_loss ? nlohmann::json(*r.final_loss) : nlohmann::json(nullptr)},
                                  {"created", r.created},
                                  {"tags", r.tags}};
            // The last session's summary line, as `run` printed it (null while running).
            row["summary"] = r.summary_json.empty() ? nlohmann::json(nullptr)
                                                    : nlohmann::json::parse(r.summary_json, nullptr, false);
            list.push_back(std::move(row));
        }
        // Names and tags are the user's bytes: text that is not UTF-8 prints as U+FFFD.
        std::cout << list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return 0;
    }
    std::printf("%-14s %-20s %-12s %8s %12s  %s\n", "RUN", "NAME", "STATUS", "STEPS", "FINAL LOSS", "CREATED");
    for (const auto& r : runs)
        std::printf("%-14s %-20s %-12s %8lld %12s  %s\n", r.run_id.c_str(), r.name.substr(0, 20).c_str(), r.status.c_str(),
                    (long long)r.steps, r.final_loss ? std::to_string(*r.final_loss).c_str() : "-", r.created.c_str());
    return 0;
}

int commandAnnotate(const std::string& store_option, const std::string& run_id, const std::string& text, bool is_tags) {
    RunStore store(storeFolder(store_option));
    if (!store.findRun(run_id))
        throw ConfigError("", "run '" + run_id + "' is not in the store " + store.path() + "; list runs with `trainbench-cli runs`");
    if (is_tags) store.setTags(run_id, text);
    else store.setNotes(run_id, text);
    return 0;
}

int commandExport(const std::string& store_option, const std::string& run_id, const std::string& format) {
    RunStore store(storeFolder(store_option));
    if (!store.findRun(run_id))
        throw ConfigError("", "run '" + run_id + "' is not in the store " + store.path() + "; list runs with `trainbench-cli runs`");
    auto points = store.metrics(run_id);
    if (format == "csv") std::cout << "step,tokens,wall_time,key,value\n";
    for (const auto& p : points) {
        if (format == "csv") {
            std::cout << p.step << "," << p.tokens << "," << nlohmann::json(p.wall_time).dump() << "," << p.key << ","
                      << (std::isfinite(p.value) ? nlohmann::json(p.value).dump() : "") << "\n";
        } else {
            std::cout << nlohmann::json{{"step", p.step},
                                        {"tokens", p.tokens},
                                        {"wall_time", p.wall_time},
                                        {"key", p.key},
                                        {"value", std::isfinite(p.value) ? nlohmann::json(p.value) : nlohmann::json(nullptr)}}
                             .dump()
                      << "\n";
        }
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

// Written beside `path` and renamed over it: a reader never sees half a file.
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

// `init --from-hf DIR`: a run config whose model section is the directory's config.json and
// which starts from its weights (train.init_from); the other sections from CONFIG when given.
int commandInitFromHf(const std::string& dir, const std::string& base_path, const std::vector<std::string>& overrides,
                      const std::string& out) {
    if (!isHuggingFaceDirectory(dir))
        throw ConfigError("--from-hf", "--from-hf " + dir + ": not a Hugging Face model directory (no config.json)");
    RunConfig config = base_path.empty() ? RunConfig{} : loadRunConfigFile(base_path);
    std::vector<std::string> notes;
    config.model = readHuggingFaceConfig(dir, &notes);
    config.train.init_from = std::filesystem::absolute(dir).lexically_normal().string();
    if (config.train.seq_len > config.model.max_seq_len) config.train.seq_len = config.model.max_seq_len;
    for (const auto& assignment : overrides) applyConfigOverride(config, assignment);
    for (const auto& issue : validateRunConfig(config))
        if (!isDataIssue(issue)) throw ConfigError(issue.path, issue.message);
    checkInitialWeights(config.model, config.train.init_from);
    for (const auto& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    writeTextFileAtomically(out, runConfigToJson(config) + "\n");
    std::cout << out << "\n";
    return 0;
}

// `export-hf`: a run's checkpoint (or a checkpoint directory, or a weights file with its
// config) as a Hugging Face directory.
int commandExportHf(const std::vector<std::string>& positionals, const std::string& checkpoint, int64_t step,
                    const std::string& store_option, const std::vector<std::string>& overrides, HfExportOptions options) {
    HfExportSummary summary;
    if (!checkpoint.empty()) {
        if (step > 0) throw ConfigError("--step", "--step picks a checkpoint of a run; with --checkpoint name it directly");
        if (positionals.size() > 1) throw ConfigError("", "with --checkpoint give at most one CONFIG");
        const bool is_checkpoint_dir = std::filesystem::is_regular_file(checkpoint + "/trainer.json");
        if (is_checkpoint_dir && positionals.empty()) {
            summary = exportCheckpointToHuggingFace(checkpoint, options);
        } else {
            if (positionals.empty())
                throw ConfigError("", checkpoint + " is a weights file: give the CONFIG it was trained with");
            // A CONFIG given names the model section; a checkpoint directory keeps its tokenizer.
            HfExportSource source;
            if (is_checkpoint_dir) source = exportSourceOfCheckpoint(checkpoint);
            else source.weights = checkpoint;
            options.tokenizer_path = source.tokenizer;
            summary = exportHuggingFace(loadWithoutData(positionals[0], overrides).model, source.weights, options);
        }
    } else {
        if (positionals.size() != 1)
            throw ConfigError("", "export-hf takes a RUN_ID (see `trainbench-cli runs`), or --checkpoint PATH [CONFIG]");
        const std::string folder = storeFolder(store_option);
        RunStore store(folder);
        if (!store.findRun(positionals[0]))
            throw ConfigError("", "run '" + positionals[0] + "' is not in the store " + store.path() +
                                      "; list runs with `trainbench-cli runs`");
        summary = exportCheckpointToHuggingFace(checkpointOfStep(store.checkpointFolder(positionals[0]), step).path, options);
    }
    std::fprintf(stderr, "%s: %lld tensors, %.1f MB in %lld file(s), %s, experts %s\n", summary.architecture.c_str(),
                 (long long)summary.tensors, summary.bytes / 1e6, (long long)summary.shards, options.dtype.c_str(),
                 options.expert_layout.c_str());
    std::cout << summary.dir << "\n";
    return 0;
}

int commandEval(const std::string& path, const std::vector<std::string>& overrides, const std::string& weights) {
    RunConfig config = loadWithOverrides(path, overrides);
    EvalResult result = evaluateWeightsFile(config, weights);
    std::cout << nlohmann::json{{"loss", result.loss}, {"tokens", result.tokens}, {"windows", result.windows}}.dump()
              << "\n";
    return 0;
}

int commandNoiseScale(const std::string& path, const std::vector<std::string>& overrides, const std::string& weights,
                      int64_t micro_batch_size, bool as_json) {
    RunConfig config = loadWithOverrides(path, overrides);
    const NoiseScaleMeasurement m = measureNoiseScaleOfWeights(config, weights, micro_batch_size);
    if (as_json) {
        std::cout << nlohmann::json{{"grad_sq", m.grad_sq},
                                    {"trace", m.trace},
                                    {"critical_batch_sequences", m.critical_batch_sequences},
                                    {"critical_batch_tokens", m.critical_batch_tokens},
                                    {"micro_batches", m.micro_batches},
                                    {"micro_batch_size", m.micro_batch_size},
                                    {"tokens", m.tokens}}
                         .dump()
                  << "\n";
        return 0;
    }
    std::printf("over %lld validation micro-batches of %lld sequences (%lld counted tokens):\n"
                "  |G|^2 %.6g   tr(Sigma) per token %.6g\n"
                "  critical batch: %.0f tokens, %.1f sequences (the global batch beyond which more data per step "
                "buys little; a trend, not an exact optimum)\n",
                (long long)m.micro_batches, (long long)m.micro_batch_size, (long long)m.tokens, m.grad_sq, m.trace,
                m.critical_batch_tokens, m.critical_batch_sequences);
    return 0;
}

// The config reference as Markdown (docs/CONFIG.md is generated from it).
int commandSchema() {
    std::string section;
    std::cout << "# Run config reference\n\nGenerated by `trainbench-cli schema`. A run config is a JSON object "
                 "with the sections below; every key is optional and takes the default shown (for the model "
                 "section, the reference DeepSeek `ModelArgs` defaults). A published DeepSeek config file, flat "
                 "ModelArgs keys, loads unchanged as the model section. `--set section.key=value` overrides any "
                 "key from the command line.\n\nEvery count has a range, checked before anything is computed "
                 "with it: ranks (`world_size`, `expert_parallel`) up to 2^20, ten times the largest clusters "
                 "trained on; `micro_batch_size` and `gradient_accumulation_steps` up to 2^20; `seq_len` and the "
                 "model's lengths up to 2^24 positions; widths up to 2^20 (hidden sizes 2^22), layers and heads "
                 "2^14, experts 2^16, vocabularies 2^31 - 1; steps 2^40; token counts 2^53. The products are "
                 "bounded too: at most 2^40 tokens per optimizer step and 2^53 in a run, 2^48 parameters, and "
                 "2^56 bytes of activations in one micro-batch. An error names the field, the range and a fix.\n";
    for (const auto& field : configSchema()) {
        if (field.section != section) {
            section = field.section;
            std::cout << "\n## " << section << "\n\n| key | type | default | meaning |\n|---|---|---|---|\n";
        }
        std::string type = field.type;
        if (!field.choices.empty()) {
            type.clear();
            for (const auto& c : field.choices) type += (type.empty() ? "" : " \\| ") + ("`" + c + "`");
        }
        std::cout << "| `" << field.key << "` | " << type << " | `" << field.default_json << "` | " << field.help << " |\n";
    }
    std::cout << "\nDefaults of a full config: `trainbench-cli schema --defaults`.\n";
    return 0;
}

}  // namespace

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
    std::fprintf(stderr, "%stokenizing %s [%s%s] %3.0f%% of %.1f MB%s", terminal ? "\r" : "", what.c_str(),
                 std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), fraction * 100, total / 1e6,
                 terminal && done < total ? "" : "\n");
}

}  // namespace

int main(int argc, char** argv) {
    setTokenizeProgress(showTokenizeProgress);
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
    std::string store_option, run_name, run_id, export_format = "jsonl";
    run->add_option("--store", store_option, "Run store folder (default: $TRAINBENCH_STORE or ~/.local/share/trainbench)");
    run->add_option("--name", run_name, "Name of the run in the store (default: the config file's name)");
    std::string explored_path;
    run->add_option("--explored", explored_path,
                    "Output of `explore --json` for this config: advise when training runs far slower than its best");
    std::vector<std::string> grid;
    bool free_global_batch = false;
    run->add_option("--grid", grid,
                    "Train every combination of one or two fields' values, one run after another: "
                    "section.key=v1,v2,... (repeat once for a second field)");
    bool check_rendezvous = false;
    run->add_flag("--check-rendezvous", check_rendezvous,
                  "Under a launcher (torchrun, Slurm): meet the other ranks through the rendezvous store, print one "
                  "JSON line and exit 0, without a device or training (proves a launch's set-up in seconds)");
    run->add_flag("--free-global-batch", free_global_batch,
                  "With --grid: let m x K x W change with the grid (by default the accumulation steps follow a "
                  "grid over the micro-batch size, and the other way round, keeping the global batch)");

    auto* resume = app.add_subcommand("resume", "Continue a run from its newest valid checkpoint");
    resume->add_option("run_id", run_id, "Run id (see `runs`)")->required();
    resume->add_option("--store", store_option, "Run store folder");
    resume->add_option("--set", overrides,
                       "Change a field for the rest of the run, e.g. train.steps=400 (repeatable; model, data, "
                       "seq_len and the global batch must stay)");

    auto* runs = app.add_subcommand("runs", "List the runs of the store, newest first");
    runs->add_option("--store", store_option, "Run store folder");
    runs->add_flag("--json", as_json, "One line: a JSON array of runs");

    std::string annotation;
    auto* tag = runs->add_subcommand("tag", "Set the tags of a run (comma-separated)");
    tag->fallthrough();  // --store belongs to `runs` and may follow the tag arguments
    tag->add_option("run_id", run_id, "Run id")->required();
    tag->add_option("tags", annotation, "Tags, e.g. baseline,lr-sweep")->required();
    auto* note = runs->add_subcommand("note", "Set the notes of a run");
    note->fallthrough();
    note->add_option("run_id", run_id, "Run id")->required();
    note->add_option("text", annotation, "The note")->required();

    auto* exporter = app.add_subcommand("export", "Print every metric point of a run, one per line");
    exporter->add_option("run_id", run_id, "Run id (see `runs`)")->required();
    exporter->add_option("--format", export_format, "csv or jsonl")->check(CLI::IsMember({"csv", "jsonl"}));
    exporter->add_option("--store", store_option, "Run store folder");

    std::string weights_path, out_path;
    int64_t seed = 0;
    std::string from_hf;
    auto* init = app.add_subcommand("init", "Write freshly initialised fp32 weights (reference names) to safetensors; "
                                            "with --from-hf, a run config that starts from a Hugging Face directory");
    init->add_option("config", config_path,
                     "Run config (JSON; a published model config needs a data section that can train it); with "
                     "--from-hf the train, data and runtime sections to keep (optional)");
    init->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");
    init->add_option("--seed", seed, "Initialisation seed")->default_val(0);
    init->add_option("--from-hf", from_hf,
                     "A Hugging Face DeepSeek-V2/V3 directory: its config.json becomes the model section and "
                     "train.init_from its weights; --out is then the run config (JSON) to write");
    init->add_option("--out", out_path, "Output .safetensors file (with --from-hf: the run config .json)")->required();

    std::vector<std::string> export_positionals;
    std::string export_checkpoint, shard_size = "5GB";
    int64_t export_step = 0;
    HfExportOptions hf_options;
    auto* export_hf = app.add_subcommand("export-hf", "Write a run's checkpoint as a Hugging Face directory "
                                                      "(transformers, vLLM and SGLang load it)");
    export_hf->add_option("source", export_positionals,
                          "RUN_ID (its newest valid checkpoint, or --step N); or with --checkpoint, the CONFIG of a "
                          "weights file");
    export_hf->add_option("--step", export_step, "The checkpoint of this optimizer step")->check(CLI::PositiveNumber);
    export_hf->add_option("--checkpoint", export_checkpoint, "A checkpoint directory, or a .safetensors file with CONFIG");
    export_hf->add_option("--out", hf_options.out_dir, "The directory to write (must not exist)")->required();
    export_hf->add_option("--dtype", hf_options.dtype, "bf16 or fp32 (the router stays fp32)")
        ->check(CLI::IsMember({"bf16", "fp32"}));
    export_hf->add_option("--shard-size", shard_size, "Largest file, e.g. 5GB, 500MB, 2GiB (default 5GB)");
    export_hf->add_option("--expert-layout", hf_options.expert_layout,
                          "per-expert (every transformers release, vLLM, SGLang) or fused (transformers 5's own)")
        ->check(CLI::IsMember({"per-expert", "fused"}));
    export_hf->add_option("--set", overrides, "Override a field of CONFIG: section.key=value (repeatable)");
    export_hf->add_option("--store", store_option, "Run store folder");

    int64_t noise_micro_batch = 0;
    auto* noise = app.add_subcommand("noise-scale",
                                     "The gradient noise scale and critical batch of a weights file at fixed weights, over "
                                     "the config's validation data");
    noise->add_option("config", config_path, "Run config (JSON)")->required();
    noise->add_option("--checkpoint", weights_path, "model.safetensors file, or a checkpoint directory")->required();
    noise->add_option("--micro-batch-size", noise_micro_batch, "Sequences per micro-batch (default train.micro_batch_size)")
        ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
    noise->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");
    noise->add_flag("--json", as_json, "Print one JSON object");
    auto* eval = app.add_subcommand("eval", "Mean token loss of a weights file on the config's validation data");
    eval->add_option("config", config_path, "Run config (JSON)")->required();
    eval->add_option("--checkpoint", weights_path,
                     "model.safetensors file, a checkpoint directory or a Hugging Face directory")->required();
    eval->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");

    auto* plan = app.add_subcommand("plan", "Memory per rank of a config: weights, gradients, optimizer, activations, peak");
    plan->add_option("config", config_path, "Run config (JSON)")->required();
    plan->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");
    plan->add_flag("--json", as_json, "Print one JSON object");

    int64_t explore_steps = 3;
    auto* explore = app.add_subcommand("explore", "Measure every micro-batch split of the global batch; recommend one");
    explore->add_option("config", config_path, "Run config (JSON)")->required();
    explore->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");
    explore->add_option("--steps", explore_steps, "Optimizer steps per split (the first is warm-up)")
        ->default_val(3)
        ->check(CLI::Range(1, 1000));
    explore->add_flag("--json", as_json, "Print one JSON object (rows and recommended) on stdout");
    bool explore_layouts = false;
    explore->add_flag("--layouts", explore_layouts,
                      "Also over the memory layouts: runtime.zero_stage 0-3 and activation_checkpointing none|feedforward|full "
                      "(only the rows the planner puts within the budget)");

    bool defaults = false;
    auto* show = app.add_subcommand("config", "Print a config complete: defaults filled in, --set applied, validated");
    show->add_option("config", config_path, "Run config (JSON; all four sections validated)")->required();
    show->add_option("--set", overrides, "Override a field: section.key=value (repeatable)");

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
        if (run->parsed() && check_rendezvous) return commandCheckRendezvous(config_path, overrides);
        if (run->parsed())
            return commandRun(config_path, overrides, store_option, run_name, explored_path, grid, free_global_batch);
        if (tag->parsed() || note->parsed()) return commandAnnotate(store_option, run_id, annotation, tag->parsed());
        if (runs->parsed()) return commandRuns(store_option, as_json);
        if (resume->parsed()) return commandResume(run_id, overrides, store_option);
        if (exporter->parsed()) return commandExport(store_option, run_id, export_format);
        if (data->parsed()) return commandData(config_path, overrides, as_json);
        if (init->parsed() && !from_hf.empty()) return commandInitFromHf(from_hf, config_path, overrides, out_path);
        if (init->parsed()) {
            if (config_path.empty()) throw ConfigError("", "init needs a CONFIG (or --from-hf DIR)");
            return commandInit(config_path, overrides, seed, out_path);
        }
        if (export_hf->parsed()) {
            hf_options.shard_bytes = parseByteSize(shard_size, "--shard-size");
            return commandExportHf(export_positionals, export_checkpoint, export_step, store_option, overrides, hf_options);
        }
        if (eval->parsed()) return commandEval(config_path, overrides, weights_path);
        if (noise->parsed())
            return commandNoiseScale(config_path, overrides, weights_path, noise_micro_batch, as_json);
        if (plan->parsed()) return commandPlan(loadWithoutData(config_path, overrides), as_json);
        if (explore->parsed()) {
            if (auto launch = processLaunchFromEnvironment())
                throw ConfigError(launch->launcher == "torchrun" ? "WORLD_SIZE" : "SLURM_NTASKS",
                                  "explore measures every split in one process; run it without " + launch->launcher);
            return commandExplore(loadWithOverrides(config_path, overrides), explore_steps, as_json, explore_layouts);
        }
        if (show->parsed()) {
            std::cout << runConfigToJson(loadWithOverrides(config_path, overrides)) << "\n";
            return 0;
        }
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
    } catch (const StoreError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return kExitInvalidInput;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return kExitRunFailed;
    }
    return 0;
}
