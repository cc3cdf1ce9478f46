// The run stream's records as JSON Lines: written by `follow`, read by the workbench (docs/design/run_stream.md).
#include "trainbench/run_stream.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

namespace trainbench {
namespace {

using nlohmann::json;

// A user's bytes (names, notes, messages) that are not UTF-8 travel as U+FFFD rather than
// ending the stream.
std::string line(const json& record) {
    return record.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

json number(double value) {
    return std::isfinite(value) ? json(value) : json(nullptr);
}

json runJson(const char* type, const RunRecord& run) {
    return {{"type", type},
            {"run_id", run.run_id},
            {"name", run.name},
            {"status", run.status},
            {"created", run.created},
            {"finished", run.finished},
            {"config", run.config_json},
            {"tags", run.tags},
            {"notes", run.notes},
            {"parent", run.parent},
            {"error", run.error},
            {"steps", run.steps},
            {"final_loss", run.final_loss ? number(*run.final_loss) : json(nullptr)},
            {"summary", run.summary_json}};
}

// Reading one record's fields: each names the field and the line when it is missing or of
// another type.
class Fields {
public:
    Fields(const json& record, int64_t line_number) : record_(record), line_number_(line_number) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw RunStreamError("run stream line " + std::to_string(line_number_) + ": " + what);
    }
    const json& field(const char* name) const {
        const auto it = record_.find(name);
        if (it == record_.end()) fail(std::string("missing field \"") + name + "\"");
        return *it;
    }
    std::string text(const char* name) const {
        const json& value = field(name);
        if (!value.is_string()) fail(std::string("field \"") + name + "\" must be a string");
        return value.get<std::string>();
    }
    int64_t integer(const char* name) const { return integerOf(field(name), name); }
    int64_t integerOf(const json& value, const char* name) const {
        if (!value.is_number_integer()) fail(std::string("field \"") + name + "\" must be an integer");
        if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
            fail(std::string("field \"") + name + "\" is out of range");
        return value.get<int64_t>();
    }
    // A number, or null for a value that was not finite.
    double real(const char* name) const { return realOf(field(name), name); }
    double realOf(const json& value, const char* name) const {
        if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
        if (!value.is_number()) fail(std::string("field \"") + name + "\" must be a number or null");
        return value.get<double>();
    }

private:
    const json& record_;
    int64_t line_number_;
};

RunRecord readRun(const Fields& fields) {
    RunRecord run;
    run.run_id = fields.text("run_id");
    run.name = fields.text("name");
    run.status = fields.text("status");
    run.created = fields.text("created");
    run.finished = fields.text("finished");
    run.config_json = fields.text("config");
    run.tags = fields.text("tags");
    run.notes = fields.text("notes");
    run.parent = fields.text("parent");
    run.error = fields.text("error");
    run.steps = fields.integer("steps");
    const double final_loss = fields.real("final_loss");
    if (!std::isnan(final_loss)) run.final_loss = final_loss;
    run.summary_json = fields.text("summary");
    if (run.run_id.empty()) fields.fail("a run record needs a run_id");
    return run;
}

}  // namespace

std::string encodeStreamHeader(const std::string& run_id, int64_t from_step, int64_t points_before,
                               const std::optional<MetricPoint>& last_before) {
    return line({{"type", "header"},
                 {"format", kRunStreamFormat},
                 {"version", kRunStreamVersion},
                 {"run_id", run_id},
                 {"from_step", from_step},
                 {"points_before", points_before},
                 {"last_before", last_before ? json::array({last_before->step, last_before->key,
                                                            number(last_before->value), number(last_before->wall_time)})
                                             : json(nullptr)}});
}

std::string encodeStreamRun(const RunRecord& run) { return line(runJson("run", run)); }
std::string encodeStreamEnd(const RunRecord& run) { return line(runJson("end", run)); }

std::string encodeStreamEvent(const RunEvent& event) {
    return line({{"type", "event"},
                 {"step", event.step},
                 {"wall_time", number(event.wall_time)},
                 {"kind", event.kind},
                 {"message", event.message}});
}

std::string encodeStreamLive() { return line({{"type", "live"}}); }
std::string encodeStreamAlive() { return line({{"type", "alive"}}); }

std::string encodeStreamPoints(const std::vector<MetricPoint>& points) {
    std::string out;
    size_t first = 0;
    while (first < points.size()) {
        const MetricPoint& head = points[first];
        json values = json::array();
        size_t last = first;
        for (; last < points.size() && points[last].step == head.step && points[last].tokens == head.tokens; ++last) {
            const MetricPoint& p = points[last];
            // Points of a step are stamped one by one: a wall time that is not the line's (as
            // bits: two NaNs match, 0.0 and -0.0 do not) travels with its point.
            if (std::memcmp(&p.wall_time, &head.wall_time, sizeof(double)) == 0)
                values.push_back(json::array({p.key, number(p.value)}));
            else
                values.push_back(json::array({p.key, number(p.value), number(p.wall_time)}));
        }
        out += line({{"type", "points"},
                     {"step", head.step},
                     {"tokens", head.tokens},
                     {"wall_time", number(head.wall_time)},
                     {"values", std::move(values)}});
        first = last;
    }
    return out;
}

std::vector<RunStreamRecord> RunStreamParser::feed(const char* bytes, size_t size) {
    std::vector<RunStreamRecord> records;
    size_t start = 0;
    for (size_t i = 0; i < size; ++i) {
        if (bytes[i] != '\n') continue;
        if (line_.size() + (i - start) > kRunStreamMaxLine)
            throw RunStreamError("run stream line " + std::to_string(line_number_ + 1) + " is longer than " +
                                 std::to_string(kRunStreamMaxLine) + " bytes");
        line_.append(bytes + start, i - start);
        start = i + 1;
        std::string complete = std::move(line_);
        line_.clear();
        ++line_number_;
        if (!complete.empty() && complete.back() == '\r') complete.pop_back();
        if (complete.empty()) continue;  // blank lines carry nothing
        if (auto record = parseLine(complete)) records.push_back(std::move(*record));
    }
    if (line_.size() + (size - start) > kRunStreamMaxLine)
        throw RunStreamError("run stream line " + std::to_string(line_number_ + 1) + " is longer than " +
                             std::to_string(kRunStreamMaxLine) + " bytes");
    line_.append(bytes + start, size - start);
    return records;
}

std::optional<RunStreamRecord> RunStreamParser::parseLine(const std::string& text) {
    const json record = json::parse(text, nullptr, /*allow_exceptions=*/false);
    const Fields fields(record, line_number_);
    if (record.is_discarded()) fields.fail("not JSON (a run stream is JSON Lines, as `trainbench-cli follow --json` prints)");
    if (!record.is_object()) fields.fail("a record must be a JSON object");
    const std::string type = fields.text("type");

    RunStreamRecord out;
    if (type == "header") {
        if (sawHeader()) fields.fail("a second header");
        const std::string format = fields.text("format");
        if (format != kRunStreamFormat)
            fields.fail("the stream's format is \"" + format + "\", not \"" + kRunStreamFormat + "\"");
        const int64_t version = fields.integer("version");
        if (version < 1) fields.fail("version " + std::to_string(version) + " is not a version of the format");
        if (version > kRunStreamVersion)
            throw RunStreamError("the node's trainbench-cli writes run stream version " + std::to_string(version) +
                                 "; this workbench reads versions up to " + std::to_string(kRunStreamVersion) +
                                 ": update the workbench (or follow with the node's older trainbench-cli)");
        out.type = RunStreamRecordType::Header;
        out.version = version_ = static_cast<int>(version);
        out.run_id = fields.text("run_id");
        out.from_step = fields.integer("from_step");
        out.points_before = fields.integer("points_before");
        if (const json& last = fields.field("last_before"); !last.is_null()) {
            if (!last.is_array() || last.size() != 4 || !last[1].is_string())
                fields.fail("field \"last_before\" must be null or [step, key, value, wall_time]");
            MetricPoint point;
            point.step = fields.integerOf(last[0], "last_before");
            point.key = last[1].get<std::string>();
            point.value = fields.realOf(last[2], "last_before");
            point.wall_time = fields.realOf(last[3], "last_before");
            out.last_before = std::move(point);
        }
        return out;
    }
    if (!sawHeader()) fields.fail("the stream must open with its header record, not \"" + type + "\"");
    if (type == "run" || type == "end") {
        out.type = type == "run" ? RunStreamRecordType::Run : RunStreamRecordType::End;
        out.run = readRun(fields);
    } else if (type == "points") {
        out.type = RunStreamRecordType::Points;
        MetricPoint shared;
        shared.step = fields.integer("step");
        shared.tokens = fields.integer("tokens");
        shared.wall_time = fields.real("wall_time");
        const json& values = fields.field("values");
        const char* const shape = "field \"values\" must be an array of [key, value] or [key, value, wall_time]";
        if (!values.is_array()) fields.fail(shape);
        for (const json& entry : values) {
            if (!entry.is_array() || entry.size() < 2 || entry.size() > 3 || !entry[0].is_string()) fields.fail(shape);
            MetricPoint point = shared;
            point.key = entry[0].get<std::string>();
            point.value = fields.realOf(entry[1], "values");
            if (entry.size() == 3) point.wall_time = fields.realOf(entry[2], "values");
            out.points.push_back(std::move(point));
        }
    } else if (type == "event") {
        out.type = RunStreamRecordType::Event;
        out.event.step = fields.integer("step");
        out.event.wall_time = fields.real("wall_time");
        out.event.kind = fields.text("kind");
        out.event.message = fields.text("message");
    } else if (type == "live") {
        out.type = RunStreamRecordType::Live;
    } else if (type == "alive") {
        out.type = RunStreamRecordType::Alive;
    } else {
        // A record type added without a new version (additions an older reader may skip keep
        // the version; the version changes only for what an older reader would misread).
        return std::nullopt;
    }
    return out;
}

}  // namespace trainbench
