// The run store's commands: `runs` (with `runs tag` and `runs note`), `export`, `samples` and `follow`.
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command_table.h"
#include "cli/config_loading.h"
#include "store/run_follower.h"
#include "tensorboard/tensorboard_export.h"
#include "trainbench/config_io.h"
#include "trainbench/run_sample.h"
#include "trainbench/run_store.h"
#include "trainbench/run_stream.h"

namespace trainbench::cli {
namespace {

struct StoreOptions {
    std::string store, run_id, annotation, format = "jsonl", out;
    int64_t from_step = 0;
    bool as_json = false;
};

void requireRun(RunStore& store, const std::string& run_id) {
    if (!store.findRun(run_id))
        throw ConfigError("", "run '" + run_id + "' is not in the store " + store.path() + "; list runs with `trainbench-cli runs`");
}

int commandRuns(const StoreOptions& o) {
    RunStore store(storeFolder(o.store));
    auto runs = store.listRuns();
    if (o.as_json) {
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

int commandAnnotate(const StoreOptions& o, bool is_tags) {
    RunStore store(storeFolder(o.store));
    requireRun(store, o.run_id);
    if (is_tags) store.setTags(o.run_id, o.annotation);
    else store.setNotes(o.run_id, o.annotation);
    return 0;
}

// TensorBoard reads files, not a stream: --out names the folder, and the file's path is printed.
int exportTensorBoard(RunStore& store, const StoreOptions& o) {
    try {
        const RunRecord run = *store.findRun(o.run_id);  // requireRun has checked it is there
        const tensorboard::StoredRun stored{run.created, run.config_json, store.metrics(o.run_id), store.events(o.run_id)};
        std::cout << tensorboard::exportRunToTensorBoard(stored, o.out) << "\n";
    } catch (const tensorboard::EventFileError& e) {
        throw ConfigError("--out", std::string("--out: ") + e.what() + "; choose a folder this user can write");
    }
    return 0;
}

int commandExport(const StoreOptions& o) {
    const bool to_tensorboard = o.format == "tensorboard";
    if (to_tensorboard && o.out.empty())
        throw ConfigError("--out", "export --format tensorboard writes an event file into a folder: --out DIR is "
                                   "required, e.g. --out tensorboard/" + o.run_id + " (then `tensorboard --logdir tensorboard`)");
    if (!to_tensorboard && !o.out.empty())
        throw ConfigError("--out", "--out is for --format tensorboard; csv and jsonl print to stdout: drop --out and "
                                   "redirect the output (> " + o.out + ")");
    RunStore store(storeFolder(o.store));
    requireRun(store, o.run_id);
    if (to_tensorboard) return exportTensorBoard(store, o);
    auto points = store.metrics(o.run_id);
    const bool csv = o.format == "csv";
    if (csv) std::cout << "step,tokens,wall_time,key,value\n";
    for (const auto& p : points) {
        if (csv) {
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

// The text a run wrote as it trained (train.sample_every), by step.
int commandSamples(const StoreOptions& o) {
    RunStore store(storeFolder(o.store));
    requireRun(store, o.run_id);
    for (const auto& event : store.events(o.run_id)) {
        const auto sample = sampleOfEvent(event);
        if (!sample) continue;
        if (o.as_json)
            std::cout << nlohmann::json{{"step", sample->step},
                                        {"prompt", sample->prompt},
                                        {"completion", sample->completion},
                                        {"ended", sample->ended}}
                             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      << "\n";
        else
            std::cout << "step " << sample->step << ": " << sample->prompt << sample->completion << "\n";
    }
    return 0;
}


std::atomic<bool> follow_interrupted{false};
void onFollowInterrupt(int) { follow_interrupted = true; }

// A record of the stream as a person reads it: a line a point, events and the end in words.
std::string humanLine(const RunStreamRecord& record) {
    switch (record.type) {
        case RunStreamRecordType::Run:
            return "run " + record.run.run_id + " (" + record.run.name + "): " + record.run.status + ", " +
                   std::to_string(record.run.steps) + " steps\n";
        case RunStreamRecordType::Points: {
            // A line a point, for grep and awk.
            std::string text;
            for (const MetricPoint& p : record.points)
                text += "step " + std::to_string(p.step) + "  " + p.key + " " +
                        (std::isfinite(p.value) ? nlohmann::json(p.value).dump() : "nan") + "\n";
            return text;
        }
        case RunStreamRecordType::Event:
            return "step " + std::to_string(record.event.step) + " [" + record.event.kind + "] " + record.event.message + "\n";
        case RunStreamRecordType::Live:
            return "-- live --\n";
        case RunStreamRecordType::End:
            return "run " + record.run.run_id + " ended: " + record.run.status + " after " +
                   std::to_string(record.run.steps) + " steps" +
                   (record.run.error.empty() ? "" : " (" + record.run.error + ")") + "\n";
        default:
            return "";
    }
}

// Everything of a run from --from-step, then live until it ends (docs/design/run_stream.md).
int commandFollow(const StoreOptions& o) {
    if (o.from_step < 0) throw ConfigError("--from-step", "--from-step must be 0 or a step (>= 1), got " + std::to_string(o.from_step));
    // The reader going away (ssh dropped, a pipe closed) is a failed write, not a signal.
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGINT, onFollowInterrupt);
    std::signal(SIGTERM, onFollowInterrupt);
    std::signal(SIGHUP, onFollowInterrupt);
    FollowOptions options;
    options.store_folder = storeFolder(o.store);
    options.run_id = o.run_id;
    options.from_step = o.from_step;
    {
        RunStore store(options.store_folder);
        requireRun(store, o.run_id);
    }
    RunStreamParser echo;  // the text form reads the records back rather than a second writer
    const auto write = [&](const std::string& lines) {
        std::string out = lines;
        if (!o.as_json) {
            out.clear();
            for (const RunStreamRecord& record : echo.feed(lines)) out += humanLine(record);
        }
        return std::fwrite(out.data(), 1, out.size(), stdout) == out.size() && std::fflush(stdout) == 0;
    };
    const bool ended = followRun(options, write, [] { return follow_interrupted.load(); });
    return ended || !follow_interrupted ? 0 : kExitInterrupted;
}

}  // namespace

void addStoreCommands(CLI::App& app, CommandTable& table) {
    // `runs`, `runs tag` and `runs note` share their options: --store belongs to `runs` and may
    // follow the tag's arguments.
    auto runs_options = std::make_shared<StoreOptions>();
    auto* runs = app.add_subcommand("runs", "List the runs of the store, newest first");
    addStoreOption(runs, runs_options->store);
    addJsonFlag(runs, runs_options->as_json, "One line: a JSON array of runs");
    table.add(runs, [runs_options] { return commandRuns(*runs_options); });
    auto* tag = runs->add_subcommand("tag", "Set the tags of a run (comma-separated)");
    tag->fallthrough();
    tag->add_option("run_id", runs_options->run_id, "Run id")->required();
    tag->add_option("tags", runs_options->annotation, "Tags, e.g. baseline,lr-sweep")->required();
    table.add(tag, [runs_options] { return commandAnnotate(*runs_options, /*is_tags=*/true); });
    auto* note = runs->add_subcommand("note", "Set the notes of a run");
    note->fallthrough();
    note->add_option("run_id", runs_options->run_id, "Run id")->required();
    note->add_option("text", runs_options->annotation, "The note")->required();
    table.add(note, [runs_options] { return commandAnnotate(*runs_options, /*is_tags=*/false); });

    auto export_options = std::make_shared<StoreOptions>();
    auto* exporter = app.add_subcommand(
        "export", "Print every metric point of a run, one per line; or write them, the config and the events as a "
                  "TensorBoard event file");
    exporter->add_option("run_id", export_options->run_id, "Run id (see `runs`)")->required();
    exporter->add_option("--format", export_options->format, "csv, jsonl (printed) or tensorboard (written under --out)")
        ->check(CLI::IsMember({"csv", "jsonl", "tensorboard"}));
    exporter->add_option("--out", export_options->out,
                         "With --format tensorboard: the folder the event file goes into (created if missing)");
    addStoreOption(exporter, export_options->store);
    table.add(exporter, [export_options] { return commandExport(*export_options); });

    auto samples_options = std::make_shared<StoreOptions>();
    auto* samples = app.add_subcommand("samples", "Print the text a run wrote as it trained (train.sample_every), by step");
    samples->add_option("run_id", samples_options->run_id, "Run id (see `runs`)")->required();
    addStoreOption(samples, samples_options->store);
    addJsonFlag(samples, samples_options->as_json, "One JSON object per sample: step, prompt, completion, ended");
    table.add(samples, [samples_options] { return commandSamples(*samples_options); });

    auto follow_options = std::make_shared<StoreOptions>();
    auto* follow = app.add_subcommand(
        "follow", "Print a run's points, events and status from --from-step on, then live as they are written, until "
                  "the run ends");
    follow->add_option("run_id", follow_options->run_id, "Run id (see `runs`)")->required();
    follow->add_option("--from-step", follow_options->from_step, "The first step to print (default: all)");
    addStoreOption(follow, follow_options->store);
    addJsonFlag(follow, follow_options->as_json,
                "The run stream: JSON Lines with a versioned header and a terminal record (docs/design/run_stream.md)");
    table.add(follow, [follow_options] { return commandFollow(*follow_options); });
}

}  // namespace trainbench::cli
