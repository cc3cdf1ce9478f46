// The run stream: one stored run as JSON Lines (what `trainbench-cli follow --json` prints), its records written and read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainbench/metric_point.h"
#include "trainbench/run_store.h"

namespace trainbench {

// The format's name and version, in the header record that opens every stream. A reader
// takes any version up to the one it was built with and refuses a newer one by name. A record
// type added later that an older reader may skip keeps the version (an older reader skips
// types it does not know); the version changes for what an older reader would misread
// (docs/design/run_stream.md).
inline constexpr const char* kRunStreamFormat = "trainbench-run-stream";
inline constexpr int kRunStreamVersion = 1;

// A line longer than this is refused rather than buffered: a run's config and summary are the
// longest records (kilobytes); a stream that never ends its line is not a run stream.
inline constexpr size_t kRunStreamMaxLine = 16u << 20;

enum class RunStreamRecordType {
    Header,  // format, version, run id, the first step sent, how many points the run has before it
    Run,     // the run as stored when the stream began
    Points,  // points of one step (and tokens), in commit order
    Event,   // one event
    Live,    // everything stored before the stream began has been sent; what follows is new
    Alive,   // nothing new for a while: the connection is up
    End,     // the terminal record: the run as stored once it left `running`
};

struct RunStreamRecord {
    RunStreamRecordType type = RunStreamRecordType::Alive;
    int version = 0;                  // Header
    std::string run_id;               // Header
    int64_t from_step = 0;            // Header
    // Header: the run's points before from_step, which the stream does not send. A reader that
    // holds the earlier points compares its count: a difference means the run was written
    // again there (resumed from an earlier checkpoint) and its copy must be read afresh.
    int64_t points_before = 0;
    // Header: the last of those points in commit order (none when points_before is 0). A copy
    // whose own last point before from_step differs (in its wall time, say) holds a run written
    // again there even when the counts agree.
    std::optional<MetricPoint> last_before;
    RunRecord run;                    // Run, End
    std::vector<MetricPoint> points;  // Points (a value that is not finite travels as null: NaN)
    RunEvent event;                   // Event
};

// A line that is not a record of the format, or a stream this build cannot read. The message
// names the line and what is wrong with it.
class RunStreamError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Each returns one line, '\n' included.
std::string encodeStreamHeader(const std::string& run_id, int64_t from_step, int64_t points_before,
                               const std::optional<MetricPoint>& last_before = std::nullopt);
std::string encodeStreamRun(const RunRecord& run);
std::string encodeStreamEnd(const RunRecord& run);
std::string encodeStreamEvent(const RunEvent& event);
std::string encodeStreamLive();
std::string encodeStreamAlive();
// Points in commit order, a line for each run of consecutive points sharing step and tokens;
// a point whose wall time is not the line's carries its own.
std::string encodeStreamPoints(const std::vector<MetricPoint>& points);

// Reads a stream as its bytes arrive, in pieces of any size. Throws RunStreamError at the first
// line that is too long, not JSON, not a record, or before a header; what was taken before it
// stands. Not thread-safe; one parser per stream.
class RunStreamParser {
public:
    // The records completed by `bytes`, in order.
    std::vector<RunStreamRecord> feed(const char* bytes, size_t size);
    std::vector<RunStreamRecord> feed(const std::string& bytes) { return feed(bytes.data(), bytes.size()); }
    // Whether the header has been read, and the version it gave.
    bool sawHeader() const { return version_ > 0; }
    int version() const { return version_; }
    // Bytes of a line not yet complete.
    size_t pending() const { return line_.size(); }

private:
    // Empty for a record type this version does not know (skipped: see kRunStreamVersion).
    std::optional<RunStreamRecord> parseLine(const std::string& line);

    std::string line_;
    int64_t line_number_ = 0;
    int version_ = 0;
};

}  // namespace trainbench

// Floor: store/ (engine/README.md)
