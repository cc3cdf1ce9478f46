// Fuzz target: a JSON Lines file (data.source "jsonl"), plain, gzip or zstd as its first bytes
// say. The first input byte picks text records or prompt/completion pairs; the rest is the file.
// Bad files must end in a ConfigError; an accepted one must give consistent chunks (starts rising
// to the byte count, each closed document ending in the end byte, one mark per byte or none) and a token
// cache that reads back with every document closed.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "data/document_builder.h"
#include "data/jsonl_records.h"
#include "data/token_cache.h"
#include "data/token_cache_writer.h"
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
    // Small chunks that may cut documents, as the byte form's cache builder takes them, and the
    // cache written from them and read back.
    constexpr int32_t kEnd = 0;
    static const std::string cache = path + ".tokens";
    int64_t closed = 0, bytes = 0;
    {
        trainbench::TokenCacheWriter writer(cache, 1, nullptr, kEnd, "fuzz");
        trainbench::DocumentBuilder builder(kEnd, 64, true, [&](trainbench::ByteChunk&& chunk) {
            const auto& st = chunk.starts;
            if (st.empty() || st.front() != 0 || st.back() != int64_t(chunk.bytes.size())) std::abort();
            if (!chunk.counted.empty() && chunk.counted.size() != chunk.bytes.size()) std::abort();
            for (size_t d = 1; d < st.size(); ++d) {
                const bool last_open = chunk.last_open && d + 1 == st.size();
                if (st[d] <= st[d - 1]) std::abort();
                if (!last_open && chunk.bytes[st[d] - 1] != char(kEnd)) std::abort();
            }
            closed += chunk.documents() - (chunk.last_open ? 1 : 0);
            bytes += int64_t(chunk.bytes.size());
            writer.add(std::move(chunk));
        });
        try {
            trainbench::readJsonLinesRecords(path, fields, builder, "data.path");
        } catch (const trainbench::ConfigError&) {
            return 0;
        }
        builder.finish();
        if (closed != builder.documents()) std::abort();
        writer.commit(builder.bytes());
    }
    const auto read = trainbench::TokenCache::open(cache, "fuzz");
    if (!read || read->documents() != closed || read->ids() != bytes) std::abort();
    for (int64_t d = 0; d < read->documents(); ++d) {
        if (read->start(d + 1) <= read->start(d)) std::abort();
        if (read->id(read->start(d + 1) - 1) != kEnd) std::abort();
    }
    return 0;
}
