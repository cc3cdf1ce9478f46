// Fuzz target: a JSON Lines file (data.source "jsonl"), plain, gzip or zstd as its first bytes
// say. The first input byte picks text records or prompt/completion pairs; the rest is the file.
// Bad files must end in a ConfigError; an accepted one must give consistent documents: starts
// rising to the id count, each document closed by the end byte, marks (pairs) one per id.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "data/document_builder.h"
#include "data/jsonl_records.h"
#include "trainbench/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    static const std::string path = "/tmp/trainbench-fuzz-jsonl-" + std::to_string(::getpid()) + ".jsonl";
    FILE* file = std::fopen(path.c_str(), "wb");
    if (!file) return 0;
    std::fwrite(data + 1, 1, size - 1, file);
    std::fclose(file);

    trainbench::RecordFields fields;
    if (data[0] & 1) {
        fields.prompt = "p";
        fields.completion = "c";
    } else {
        fields.text = "t";
    }
    constexpr int32_t kEnd = 0;
    trainbench::DocumentBuilder builder(kEnd);
    try {
        trainbench::readJsonLinesRecords(path, fields, builder, "data.path");
    } catch (const trainbench::ConfigError&) {
        return 0;
    }
    const trainbench::Documents docs = builder.take();
    if (docs.starts.empty() || docs.starts.front() != 0 || docs.starts.back() != int64_t(docs.ids.size())) std::abort();
    for (size_t d = 1; d < docs.starts.size(); ++d) {
        if (docs.starts[d] <= docs.starts[d - 1]) std::abort();
        if (docs.ids[docs.starts[d] - 1] != kEnd) std::abort();
    }
    if (!docs.counted.empty() && docs.counted.size() != docs.ids.size()) std::abort();
    for (int32_t id : docs.ids)
        if (id < 0 || id > 255) std::abort();
    return 0;
}
