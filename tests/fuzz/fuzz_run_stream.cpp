// Fuzz target: the run stream a remote `trainbench-cli follow --json` sends, as the workbench
// reads it. The first input byte picks the sizes the bytes arrive in (a network splits lines
// anywhere); the rest is the stream. A bad stream must end in a RunStreamError; every record
// accepted must survive being written again and read back with the same content.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "trainbench/run_stream.h"

namespace {

bool sameValue(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(double)) == 0;
}

void checkRewritten(const trainbench::RunStreamRecord& record) {
    using trainbench::RunStreamRecordType;
    std::string again = trainbench::encodeStreamHeader("r", 0, 0);
    if (record.type == RunStreamRecordType::Points) again += trainbench::encodeStreamPoints(record.points);
    else if (record.type == RunStreamRecordType::Event) again += trainbench::encodeStreamEvent(record.event);
    else if (record.type == RunStreamRecordType::Run) again += trainbench::encodeStreamRun(record.run);
    else return;
    trainbench::RunStreamParser parser;
    const auto back = parser.feed(again);  // throws (and the fuzzer reports it) if our own output is refused
    if (record.type == RunStreamRecordType::Points) {
        std::vector<trainbench::MetricPoint> points;
        for (size_t i = 1; i < back.size(); ++i) points.insert(points.end(), back[i].points.begin(), back[i].points.end());
        if (points.size() != record.points.size()) std::abort();
        for (size_t i = 0; i < points.size(); ++i)
            if (points[i].step != record.points[i].step || points[i].tokens != record.points[i].tokens ||
                points[i].key != record.points[i].key || !sameValue(points[i].value, record.points[i].value) ||
                !sameValue(points[i].wall_time, record.points[i].wall_time))
                std::abort();
    } else if (back.size() != 2) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const size_t piece = 1 + data[0] % 64;
    const char* bytes = reinterpret_cast<const char*>(data + 1);
    const size_t length = size - 1;
    trainbench::RunStreamParser parser;
    try {
        for (size_t at = 0; at < length; at += piece)
            for (const auto& record : parser.feed(bytes + at, std::min(piece, length - at))) checkRewritten(record);
    } catch (const trainbench::RunStreamError&) {
    }
    return 0;
}
