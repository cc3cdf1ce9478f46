// CompareSummary: the numbers that set runs apart in the Compare view, computed from their stored points.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <QString>

#include "trainbench/metric_point.h"
#include "trainbench/run_store.h"

namespace trainbench::gui {

struct CompareSummary {
    static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

    QString run_id;
    QString name;
    double final_loss = kNone;         // the last finite train/loss point, else the run's recorded one
    double best_loss = kNone;          // the lowest finite train/loss point
    double tokens_per_s = kNone;       // mean of perf/tokens_per_s
    double peak_memory_bytes = kNone;  // max over every mem/<device>/peak_bytes
    double wall_time_s = kNone;        // the latest wall time of any of these points
    // The batch identity m x K x W = B from the stored config; 0 where it says nothing.
    int64_t micro_batch_size = 0;
    int64_t accumulation_steps = 0;
    int64_t world_size = 0;
    int64_t global_batch_size = 0;
};

// `loss`: the run's train/loss points; `throughput`: perf/tokens_per_s; `peaks`: the points of
// every mem/<device>/peak_bytes key. B is train.global_batch_size when set, else m K W.
CompareSummary summarizeForComparison(const RunRecord& run, const std::vector<MetricPoint>& loss,
                                      const std::vector<MetricPoint>& throughput,
                                      const std::vector<MetricPoint>& peaks);

// Whether `key` is one of the per-device peak memory keys (mem/<device>/peak_bytes).
bool isPeakMemoryKey(const std::string& key);

// summarizeForComparison of a stored run: reads its loss, its throughput and every peak memory
// key among `keys` (the keys the run has points of). Runs where `store` lives (a StoreReader's
// query thread).
CompareSummary summarizeStoredRun(RunStore& store, const RunRecord& run, const std::vector<std::string>& keys);

// The Compare view's summary table, column by column (plain enumerators: they index its columns).
struct CompareSummaryTable {
    enum Column {
        RunName, FinalLoss, BestLoss, TokensPerS, PeakMemory, MicroBatch, Accumulation, World, GlobalBatch, WallTime,
        ColumnCount
    };

    static QString header(Column column);
    // What `column` says of `summary`: losses to four decimals, tokens/s grouped, bytes, the batch
    // identity's counts, the wall time as formatDuration writes it; missingValue() where the
    // summary has nothing.
    static QString text(const CompareSummary& summary, Column column);
};

}  // namespace trainbench::gui
