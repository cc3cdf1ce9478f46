// `run` (one config, a grid of them, or a launch's rendezvous check) and `resume`: training to
// the end with progress, Ctrl-C, the store's record and the summary line.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command_table.h"
#include "cli/config_loading.h"
#include "trainbench/batch_explorer.h"
#include "trainbench/batch_schedule.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_grid.h"
#include "trainbench/config_io.h"
#include "trainbench/event_kind.h"
#include "trainbench/metric_keys.h"
#include "trainbench/process_launch.h"
#include "trainbench/run_recorder.h"
#include "trainbench/run_sample.h"
#include "trainbench/run_store.h"
#include "trainbench/training_session.h"

namespace trainbench::cli {
namespace {

std::atomic<int> g_interrupts{0};
// The first Ctrl-C stops at the next micro-batch boundary; a second one leaves at once.
extern "C" void onInterrupt(int) {
    if (g_interrupts.fetch_add(1) >= 1) _exit(kExitInterrupted);
}

// One metric of a step's values, NaN when the step did not log it.
double valueOf(const std::map<std::string, double>& values, const char* key) {
    auto it = values.find(key);
    return it == values.end() ? std::nan("") : it->second;
}

// On a terminal: one self-overwriting progress line with ETA; otherwise one line per step.
class ProgressPrinter {
public:
    explicit ProgressPrinter(int64_t total_steps) : total_(total_steps), terminal_(::isatty(STDERR_FILENO) == 1) {}
    void step(int64_t step, const std::map<std::string, double>& values, double elapsed_s) {
        auto get = [&](const char* key) { return valueOf(values, key); };
        if (!terminal_) {
            std::fprintf(stderr, "step %5lld/%lld  loss %.4f  lr %.3e  grad_norm %.3f  tokens/s %.0f\n", (long long)step,
                         (long long)total_, get(metric::kLoss), get(metric::kLearningRate), get(metric::kGradNorm),
                         get(metric::kTokensPerSecond));
            return;
        }
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
// The other ranks of a launch are quiet: rank 0 speaks for the run (its progress, events and
// summary line); theirs would repeat it once per process. A failure is said by every rank.
int trainToEnd(TrainingSession& session, RunRecorder* recorder, const RunConfig& config, const std::string& label,
               bool speaks = true) {
    auto inbox = session.bus().subscribe();
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    session.start();
    const BatchSchedule schedule(config);
    if (speaks)
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
        for (const auto& e : batch.events) {
            if (e.kind == eventKindName(EventKind::Status)) continue;
            if (const auto sample = sampleOfEvent(e))
                progress.message("[sample] step " + std::to_string(sample->step) + ": " + sample->prompt + sample->completion);
            else
                progress.message("[" + e.kind + "] " + e.message);
        }
    };
    while (!session.wait(std::chrono::milliseconds(0))) {
        const BusBatch batch = inbox->waitAndDrain(std::chrono::milliseconds(200));
        if (speaks) report(batch);
        if (g_interrupts.load() > 0 && !interrupted) {
            interrupted = true;
            progress.message("interrupted: stopping at the next micro-batch boundary (a checkpoint is written)");
            session.stop();
        }
    }
    if (speaks) report(inbox->drain());
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
        // docs/design/run_contract.md section 5: a run ended by Ctrl-C reports `interrupted`.
        auto json = nlohmann::json::parse(line);
        json["status"] = "interrupted";
        line = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    if (speaks) std::cout << line << "\n";
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

// A config file and its overrides as a launched rank reads them: the launcher's world size is
// in place before the config is checked (expert_parallel must divide it).
std::pair<RunConfig, std::optional<ProcessLaunch>> loadLaunched(const std::string& path,
                                                                const std::vector<std::string>& overrides) {
    RunConfig config = loadRunConfigFile(path);
    for (const auto& assignment : overrides) applyConfigOverride(config, assignment);
    std::optional<ProcessLaunch> launch = launchedRank(config);
    requireValidRunConfig(config);
    return {std::move(config), std::move(launch)};
}

// Only global rank 0 of a launch writes the store.
bool recordsHere(const std::optional<ProcessLaunch>& launch) { return !launch || launch->rank == 0; }

struct RunOptions {
    std::string config_path, store, name, explored_path;
    std::vector<std::string> overrides, grid;
    bool free_global_batch = false;
    bool check_rendezvous = false;
};

// One run, or with --grid every point of the grid one after another (all of them checked
// before the first starts). The exit code is the worst: 130 when interrupted (the rest do
// not start), else 3 when any failed.
int commandRun(const RunOptions& o) {
    auto [base, launch] = loadLaunched(o.config_path, o.overrides);
    if (launch && !o.grid.empty())
        throw ConfigError("--grid", "--grid runs its points one after another in one process; under " +
                                        launch->launcher + " start one launch per point instead");
    const std::string name = o.name.empty() ? fileStem(o.config_path) : o.name;
    std::vector<std::pair<std::string, RunConfig>> jobs;
    if (o.grid.empty()) {
        jobs.emplace_back(name, base);
    } else {
        std::vector<GridAxis> axes;
        for (const std::string& text : o.grid) axes.push_back(parseGridAxis(text));
        for (GridPoint& point : expandConfigGrid(base, axes, !o.free_global_batch))
            jobs.emplace_back(name + " " + point.label(), std::move(point.config));
    }
    const std::string folder = storeFolder(o.store);
    std::optional<ExploredBest> explored_best;
    if (!o.explored_path.empty()) explored_best = readExploredBest(o.explored_path);
    int worst = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        const auto& [job_name, config] = jobs[i];
        if (jobs.size() > 1) std::fprintf(stderr, "grid run %zu of %zu: %s\n", i + 1, jobs.size(), job_name.c_str());
        SessionOptions options;
        options.explored_best = explored_best;
        options.run_id = generateRunId();
        // A launch's other ranks leave the store alone: rank 0's id and folder become theirs.
        if (recordsHere(launch)) options.checkpoint_dir = RunStore(folder).checkpointFolder(options.run_id);
        options.launch = launch;
        TrainingSession session(config, options);
        std::optional<RunRecorder> recorder;
        if (recordsHere(launch)) recorder.emplace(folder, session, job_name);
        const int code = trainToEnd(session, recorder ? &*recorder : nullptr, config, job_name + ", " + o.config_path,
                                    recordsHere(launch));
        if (code == kExitInterrupted) return code;
        worst = std::max(worst, code);
    }
    return worst;
}

// `run --check-rendezvous`: the launch's rendezvous and nothing else (runtime.comm_timeout_s
// bounds the wait).
int commandCheckRendezvous(const RunOptions& o) {
    const auto [config, launch] = loadLaunched(o.config_path, o.overrides);
    if (!launch)
        throw ConfigError("--check-rendezvous", "--check-rendezvous checks a launch: start this command through torchrun "
                                                "(--nproc-per-node N ... --no-python) or srun, one process per rank");
    std::printf("%s\n", checkRendezvous(*launch, config.runtime.comm_timeout_s).c_str());
    return 0;
}

struct ResumeOptions {
    std::string run_id, store;
    std::vector<std::string> overrides;
};

int commandResume(const ResumeOptions& o) {
    const std::string folder = storeFolder(o.store);
    RunStore store(folder);
    auto run = store.findRun(o.run_id);
    if (!run)
        throw ConfigError("", "run '" + o.run_id + "' is not in the store " + store.path() +
                                  "; list runs with `trainbench-cli runs`");
    if (run->status == "running")
        throw ConfigError("", "run '" + o.run_id + "' is still running (its owner process is alive); stop it first");
    RunConfig config = parseRunConfig(run->config_json, "the stored config of run " + o.run_id);
    // Extending a run (more steps, another schedule) is a resume with overrides; the session
    // refuses changes the checkpoint cannot follow.
    for (const auto& assignment : o.overrides) applyConfigOverride(config, assignment);
    SessionOptions options;
    options.launch = launchedRank(config);
    // Checked with or without overrides: a stored config may predate a rule, or the store may
    // have been edited by hand.
    requireValidRunConfig(config);
    std::vector<std::string> skipped;
    options.run_id = o.run_id;
    options.checkpoint_dir = store.checkpointFolder(o.run_id);
    // run->steps is the last step whose points the store holds: a checkpoint written after it
    // (the process killed before its next commit) would leave those steps without points.
    auto checkpoint = checkpointToResume(options.checkpoint_dir, skipped, run->steps);
    for (const auto& why : skipped) std::fprintf(stderr, "skipping a checkpoint: %s\n", why.c_str());
    if (!checkpoint)
        throw ConfigError("", "run '" + o.run_id + "' has no valid checkpoint in " + options.checkpoint_dir +
                                  "; it cannot be resumed (start it again with `trainbench-cli run`)");
    if (checkpoint->step > run->steps)
        std::fprintf(stderr, "the store holds points up to step %lld only: steps %lld to %lld will have none\n",
                     (long long)run->steps, (long long)run->steps + 1, (long long)checkpoint->step);
    options.resume_from = checkpoint->path;
    TrainingSession session(config, options);
    std::optional<RunRecorder> recorder;
    if (recordsHere(options.launch)) recorder.emplace(folder, session, checkpoint->step);
    if (recordsHere(options.launch))
        std::fprintf(stderr, "resuming %s from step %lld (%s)\n", o.run_id.c_str(), (long long)checkpoint->step,
                     checkpoint->path.c_str());
    return trainToEnd(session, recorder ? &*recorder : nullptr, config, run->name + ", resumed",
                      recordsHere(options.launch));
}

}  // namespace

void addRunCommands(CLI::App& app, CommandTable& table) {
    auto run_options = std::make_shared<RunOptions>();
    RunOptions& r = *run_options;
    auto* run = app.add_subcommand("run", "Train a config; prints progress and a final JSON summary line");
    addConfigArgument(run, r.config_path);
    addOverridesOption(run, r.overrides);
    addStoreOption(run, r.store);
    run->add_option("--name", r.name, "Name of the run in the store (default: the config file's name)");
    run->add_option("--explored", r.explored_path,
                    "Output of `explore --json` for this config: advise when training runs far slower than its best");
    run->add_option("--grid", r.grid,
                    "Train every combination of one or two fields' values, one run after another: "
                    "section.key=v1,v2,... (repeat once for a second field)");
    run->add_flag("--check-rendezvous", r.check_rendezvous,
                  "Under a launcher (torchrun, Slurm): meet the other ranks through the rendezvous store, print one "
                  "JSON line and exit 0, without a device or training (proves a launch's set-up in seconds)");
    run->add_flag("--free-global-batch", r.free_global_batch,
                  "With --grid: let m x K x W change with the grid (by default the accumulation steps follow a "
                  "grid over the micro-batch size, and the other way round, keeping the global batch)");
    table.add(run, [run_options] {
        return run_options->check_rendezvous ? commandCheckRendezvous(*run_options) : commandRun(*run_options);
    });

    auto resume_options = std::make_shared<ResumeOptions>();
    auto* resume = app.add_subcommand("resume", "Continue a run from its newest valid checkpoint");
    resume->add_option("run_id", resume_options->run_id, "Run id (see `runs`)")->required();
    addStoreOption(resume, resume_options->store);
    resume->add_option("--set", resume_options->overrides,
                       "Change a field for the rest of the run, e.g. train.steps=400 (repeatable; model, data, "
                       "seq_len and the global batch must stay)");
    table.add(resume, [resume_options] { return commandResume(*resume_options); });
}

}  // namespace trainbench::cli
