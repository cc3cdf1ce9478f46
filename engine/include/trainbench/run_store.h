// RunStore: the SQLite run store (runs, metrics, events, checkpoints), one runs.db per folder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainbench/metric_point.h"

namespace trainbench {

struct RunRecord {
    std::string run_id;
    std::string name;
    std::string status;    // running | completed | stopped | failed | interrupted
    std::string created;   // ISO 8601 UTC
    std::string finished;  // empty while running
    std::string config_json;
    std::string tags;      // comma-separated
    std::string notes;
    std::string parent;    // the run this one resumed or was derived from
    std::string error;     // the reason of a failure
    int64_t steps = 0;
    std::optional<double> final_loss;
    std::string summary_json;  // the summary line of the run's last session; empty before it ends
};

// A checkpoint a run wrote (it may since have been pruned from disk).
struct CheckpointRecord {
    int64_t step = 0;
    std::string path;
    std::string checksum;  // SHA-256 of its trainer.json, which records those of the tensor files
};

class StoreError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Thread contract: one RunStore per thread (each owns its SQLite connection). Any number of
// readers, in this or other processes, may open the same folder while one writer commits.
class RunStore {
public:
    // The folder: dataFolder() (trainbench/data_folder.h).
    static std::string defaultFolder();

    // Opens (creating if needed) `folder`/runs.db in WAL mode and migrates its schema. Runs left
    // `running` by a process that is gone are marked `interrupted`. Throws StoreError.
    explicit RunStore(const std::string& folder);
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    const std::string& path() const;
    int schemaVersion() const;

    // Registers a run as `running`, owned by this process (heartbeat now).
    void createRun(const RunRecord& run);
    void appendMetrics(const std::string& run_id, const std::vector<MetricPoint>& points);
    void appendEvents(const std::string& run_id, const std::vector<RunEvent>& events);
    // One transaction for both, plus the heartbeat: what the writer thread calls.
    void commitBatch(const std::string& run_id, const std::vector<MetricPoint>& points,
                     const std::vector<RunEvent>& events);
    // Takes a run over again for a resume from a checkpoint at `from_step`: points and events
    // after that step (written by the process that died) are removed, and the run is
    // `running` again, owned by this process. A non-empty `config_json` replaces the stored
    // config (a resume that extends the run).
    void reopenRun(const std::string& run_id, int64_t from_step, const std::string& config_json = "");
    // Where the checkpoints of a run live: <store folder>/checkpoints/<run id>.
    std::string checkpointFolder(const std::string& run_id) const;
    void finishRun(const std::string& run_id, const std::string& status, int64_t steps,
                   std::optional<double> final_loss, const std::string& error, const std::string& summary_json = "");
    // A run as another store holds it (the workbench's copy of a remote run): inserted, or
    // updated, with its status and fields as given and no owner here, so opening this store
    // never marks it interrupted: its status is the other store's to say.
    void mirrorRun(const RunRecord& run);
    // Removes a run's points, events and checkpoints at `from_step` and after (a copy about to
    // receive them again).
    void removeFromStep(const std::string& run_id, int64_t from_step);
    // The highest step of a run's points (0: none), and how many points it has before `step`.
    int64_t lastStep(const std::string& run_id);
    int64_t pointCountBefore(const std::string& run_id, int64_t step);
    // The last point committed (by row) of those before `step`; none when there is none.
    std::optional<MetricPoint> lastPointBefore(const std::string& run_id, int64_t step);
    void setTags(const std::string& run_id, const std::string& tags);
    void setNotes(const std::string& run_id, const std::string& notes);

    // Newest first.
    std::vector<RunRecord> listRuns();
    std::optional<RunRecord> findRun(const std::string& run_id);
    // Points of one run, ordered by step; all keys when `key` is empty.
    std::vector<MetricPoint> metrics(const std::string& run_id, const std::string& key = "");
    // Points of one key after step `after_step`, ordered by step: what a live comparison reads.
    std::vector<MetricPoint> metricsAfterStep(const std::string& run_id, const std::string& key, int64_t after_step);
    // Points of one run committed after row `after_row` (0: all), in the order they were
    // committed; `last_row` receives the row of the last one (after_row when none). What a
    // reader following a live run calls, so each read costs what is new, not the whole run.
    std::vector<MetricPoint> metricsAfter(const std::string& run_id, int64_t after_row, int64_t* last_row);
    std::vector<std::string> metricKeys(const std::string& run_id);
    std::vector<RunEvent> events(const std::string& run_id);
    // Ordered by step.
    std::vector<CheckpointRecord> checkpoints(const std::string& run_id);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench

// Floor: store/ (engine/README.md)
