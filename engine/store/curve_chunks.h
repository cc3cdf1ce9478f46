// Curve chunks: the points of one key packed a thousand at a time into one blob row beside the
// metrics rows, so that reading a long curve steps through a thousand rows, not a million.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trainbench/metric_point.h"

namespace trainbench {

// The metrics rows stay the truth: every point is a row, and a chunk is a copy of the rows of
// one key with steps in (covers_after, last_step]. A reader takes chunks while they follow one
// another without a gap and reads the rows after the last one it took; anything that breaks
// the chain (a chunk removed, a blob of the wrong size) only sends it back to the rows sooner.
//
// The writer side keeps, per key, the points not yet sealed into a chunk. Its memory is a
// cache of the file: it is checked against the file before each seal and rebuilt from the rows
// when it does not match, so another writer of the same run or a rolled back transaction
// cannot make it write a wrong chunk.
class CurveChunks {
public:
    static constexpr size_t kPointsPerChunk = 1024;
    // Points of one key a writer holds unsealed before it gives up chunking that key for the
    // rest of its session (reads then take its rows): a step that never advances (a sampler
    // at a held step) or a long run written before chunks existed, resumed.
    static constexpr size_t kMaxPendingPoints = 64 * kPointsPerChunk;

    // Inside the writer's transaction, after `points` were inserted as rows: seals every full
    // chunk. A point at or before the end of a sealed chunk of its key removes the chunks it
    // falls into (their copy is no longer whole).
    void afterInsert(sqlite3* db, const std::string& run_id, const std::vector<MetricPoint>& points);
    // Inside the transaction that removes a run's rows after `from_step`; forgets what it holds.
    void dropAfter(sqlite3* db, const std::string& run_id, int64_t from_step);
    // Drops what the writer holds in memory (after a transaction rolled back, a run ended).
    void forget();

    // Appends the points of `key` after `after_step` that chunks hold to `out`, in step order;
    // returns the step after which the caller reads the rest from the rows.
    static int64_t read(sqlite3* db, const std::string& run_id, const std::string& key, int64_t after_step,
                        std::vector<MetricPoint>& out);

private:
    struct Packed {
        int64_t step;
        int64_t tokens;
        double wall_time;
        double value;  // NaN for a non-finite value, as the rows read back
    };
    struct Curve {
        int64_t covers_after = 0;     // the last step of the key's last chunk in the file
        std::vector<Packed> pending;  // the key's rows after it, in step order once sorted
        bool given_up = false;        // more than kMaxPendingPoints would not seal: rows only
    };

    // The key's state as the file has it: its last chunk's end and the rows after it.
    static Curve loadCurve(sqlite3* db, const std::string& run_id, const std::string& key);
    static void giveUp(Curve& curve);
    void sealFullChunks(sqlite3* db, const std::string& run_id, const std::string& key, Curve& curve);

    std::map<std::pair<std::string, std::string>, Curve> curves_;
    // SQLite's data_version when this writer last looked: it changes when another connection
    // commits, which may have added rows this writer's memory does not hold.
    int64_t data_version_ = -1;
};

}  // namespace trainbench
