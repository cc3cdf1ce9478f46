// DataSummary: what a config's data section amounts to (`trainbench-cli data`), behind plain C++.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

// Counts are std::nullopt for an unbounded source (markov).
struct DataSummary {
    std::string source;   // markov | text | tokens | jsonl | parquet
    std::string layout;   // the document sources: packed | padded; otherwise empty
    int64_t vocab_size = 0;
    int64_t seq_len = 0;  // windows hold seq_len + 1 tokens
    std::optional<int64_t> train_tokens, val_tokens;
    std::optional<int64_t> train_windows, val_windows;  // samples per epoch
    std::optional<double> entropy_floor_nats;           // synthetic sources
    // The document sources (text, jsonl, parquet): documents (records) per part, and the tokens
    // that count as targets (a prompt's do not; with no pairs, every token).
    std::optional<int64_t> train_documents, val_documents;
    std::optional<int64_t> train_counted, val_counted;
    // The document sources: the tokenizer ("bytes", or the kind and file) and the tokens per byte
    // read (both parts; an end-of-document token counts as a token).
    std::string tokenizer;
    std::optional<double> tokens_per_byte;
    // The document sources: the token caches the ids are read from (data.path's, then
    // data.val_path's), memory-mapped: their pages are read from disk as windows need them and
    // are the kernel's to drop, so the source holds no memory that grows with the corpus.
    struct TokenCacheUse {
        std::string path;
        int64_t bytes = 0;
        int id_bytes = 0;     // 1, 2 or 4: the narrowest width holding the vocabulary
        bool built = false;   // false: an existing cache was reused
    };
    std::vector<TokenCacheUse> token_caches;
    // A mixture (data.sources): each source's name, weight and share of the training windows
    // (whole numbers of a cycle), and its parts' sizes; the counts above are their sums, and the
    // training windows are unbounded (each source is read in epochs of its own).
    struct MixturePart {
        std::string name;
        std::string source;
        double weight = 0;
        double share = 0;
        int64_t train_tokens = 0, val_tokens = 0;
        int64_t train_documents = 0, val_documents = 0;
        int64_t train_windows = 0;  // per epoch of this source
    };
    std::vector<MixturePart> mixture;
};

// Opens the data section of a validated config. Throws ConfigError naming the file or field.
DataSummary describeData(const RunConfig& config);

// One JSON object: source, layout, vocab_size, seq_len, train_tokens, val_tokens, train_windows,
// val_windows, entropy_floor_nats, train_documents, val_documents, train_counted, val_counted,
// tokenizer, tokens_per_byte (null where unbounded or unknown), token_caches (a list of
// {path, bytes, id_bytes, built}; empty for the sources that have none), mixture (a list of
// {name, source, weight, share, train_tokens, val_tokens, train_documents, val_documents,
// train_windows}; empty without data.sources).
std::string dataSummaryToJson(const DataSummary& summary);

}  // namespace trainbench

// Floor: data/ (engine/README.md)
