// CorpusCache: key and fingerprint, the build lock, and the streaming pass through the readers.
#include "data/corpus_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <nlohmann/json.hpp>

#include "data/corpus_fingerprint.h"
#include "data/data_files.h"
#include "data/document_builder.h"
#include "data/hf_dataset_records.h"
#include "data/jsonl_records.h"
#include "data/parquet_records.h"
#include "data/text_documents.h"
#include "data/token_cache_writer.h"
#include "trainbench/config_io.h"
#include "trainbench/data_folder.h"
#include "trainbench/tokenize_progress.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kChunkBytes = 8 << 20;

std::mutex g_progress_mutex;
TokenizeProgress g_progress;

void report(const std::string& what, int64_t done, int64_t total) {
    std::lock_guard<std::mutex> lock(g_progress_mutex);
    if (g_progress) g_progress(what, done, total);
}

// An exclusive advisory lock on a file, held while the object lives (flock: per open file, so
// rank threads of one process exclude each other as processes do; released if the holder dies).
class BuildLock {
public:
    BuildLock(const fs::path& path, const std::string& what, int64_t total) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) return;  // no lock without a writable folder: the build below says why
        if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
        report(what + " (waiting for another process building its token cache)", 0, total);
        while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    ~BuildLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    BuildLock(const BuildLock&) = delete;
    BuildLock& operator=(const BuildLock&) = delete;

private:
    int fd_ = -1;
};

std::vector<fs::path> corpusFiles(DataSource kind, const std::string& path, const std::string& field) {
    if (kind == DataSource::Jsonl) return listDataFiles(path, field, jsonLinesSuffixes(), "JSON Lines files");
    if (kind == DataSource::Parquet) return listDataFiles(path, field, {".parquet"}, "Parquet files");
    if (kind == DataSource::HfDataset) return hfDatasetFiles(path, field);
    return listDataFiles(path, field);
}

// Every setting that changes the ids of the same files.
std::string readingOf(const DataConfig& data, const CorpusTokens& tokens) {
    const RecordFields fields = RecordFields::of(data);
    nlohmann::json reading{{"format", 3}, {"source", data.source}, {"tokenizer", tokens.tokenizer_hash},
                           {"end_token", tokens.end_token}};
    if (dataSource(data) == DataSource::Text) reading["doc_separator"] = data.doc_separator;
    else if (fields.pairs()) reading["pair"] = {fields.prompt, fields.completion};
    else reading["text_field"] = fields.text;
    return reading.dump();
}

int64_t sizeOf(const fs::path& file) {
    std::error_code error;
    const auto size = fs::file_size(file, error);
    return error ? 0 : static_cast<int64_t>(size);
}

}  // namespace

void setTokenizeProgress(TokenizeProgress progress) {
    std::lock_guard<std::mutex> lock(g_progress_mutex);
    g_progress = std::move(progress);
}

std::string tokenCacheFolder() {
    if (const char* folder = std::getenv("TRAINBENCH_TOKEN_CACHE"); folder && *folder) return folder;
    return (fs::path(dataFolder()) / "token-cache").string();
}

CachedCorpus cacheCorpus(const DataConfig& data, const std::string& path, const std::string& field,
                         const CorpusTokens& tokens) {
    const std::string where = field + " (\"" + path + "\")";
    const DataSource kind = dataSource(data);
    const std::vector<fs::path> files = corpusFiles(kind, path, field);
    const CorpusIdentity identity = corpusIdentity(files, readingOf(data, tokens));
    const fs::path folder = tokenCacheFolder();
    const fs::path cache_path = folder / (identity.key + ".tokens");
    if (auto cache = TokenCache::open(cache_path, identity.fingerprint)) return {std::move(cache), false};

    int64_t total = 0;
    for (const fs::path& file : files) total += sizeOf(file);
    std::error_code error;
    fs::create_directories(folder, error);
    const BuildLock lock(folder / (identity.key + ".lock"), where, total);
    // Another process may have built it while this one waited.
    if (auto cache = TokenCache::open(cache_path, identity.fingerprint)) return {std::move(cache), false};
    // The lock is held, so a partial file of this key is a killed build's: remove it.
    const std::string partial_prefix = cache_path.filename().string() + ".partial.";
    for (const auto& entry : fs::directory_iterator(folder, error))
        if (entry.path().filename().string().rfind(partial_prefix, 0) == 0) fs::remove(entry.path(), error);

    std::unique_ptr<TokenCacheWriter> writer;
    try {
        writer = std::make_unique<TokenCacheWriter>(cache_path.string(), tokenIdWidth(tokens.vocab_size),
                                                    tokens.tokenizer, tokens.end_token, identity.fingerprint);
    } catch (const std::runtime_error& e) {
        throw ConfigError(field, where + ": " + e.what() + "; or set TRAINBENCH_TOKEN_CACHE to a writable folder");
    }
    // Progress in file bytes: the files read so far and the current one's text, capped at its size.
    report(where, 0, total);
    int64_t files_done = 0, file_size = 0, file_text_start = 0;
    auto last_report = std::chrono::steady_clock::now();
    DocumentBuilder* current = nullptr;
    // Byte 0 ends each document (the byte form's end id; a tokenizer puts its own token there).
    // Only the byte form may cut a document between chunks: a tokenizer needs it whole.
    DocumentBuilder builder(0, kChunkBytes, tokens.tokenizer == nullptr, [&](ByteChunk&& chunk) {
                                try {
                                    writer->add(std::move(chunk));
                                } catch (const std::runtime_error& e) {
                                    throw ConfigError(field, where + ": cannot be tokenised: " + e.what());
                                }
                                const auto now = std::chrono::steady_clock::now();
                                if (now - last_report < std::chrono::milliseconds(200)) return;
                                last_report = now;
                                const int64_t in_file = std::min(file_size, current->bytes() - file_text_start);
                                report(where, std::min(total, files_done + in_file), total);
                            });
    current = &builder;
    const RecordFields fields = RecordFields::of(data);
    int64_t readable = 0;
    for (const fs::path& file : files) {
        file_size = sizeOf(file);
        file_text_start = builder.bytes();
        if (kind == DataSource::Jsonl) readJsonLinesRecords(file, fields, builder, field);
        else if (kind == DataSource::Parquet) readParquetRecords(file, fields, builder, field);
        else if (kind == DataSource::HfDataset) readHfDatasetRecords(file, fields, builder, field);
        else if (!readTextDocuments(file, data.doc_separator, builder)) continue;  // an unreadable file is skipped
        ++readable;
        files_done += file_size;
    }
    builder.finish();
    if (kind == DataSource::Text && readable == 0)
        throw ConfigError(field, where + ": no file could be read; check the permissions of the files");
    if (builder.documents() == 0)
        throw ConfigError(field, where + (kind == DataSource::Text
                                              ? ": no text (the files are empty or hold only separators); point " +
                                                    field + " at non-empty text"
                                              : ": no records with text (every record's text is empty); point " +
                                                    field + " at a dataset with text"));
    try {
        writer->commit(builder.bytes());
    } catch (const std::runtime_error& e) {
        throw ConfigError(field, where + ": cannot be tokenised: " + e.what());
    }
    report(where, total, total);
    auto cache = TokenCache::open(cache_path, identity.fingerprint);
    if (!cache)
        throw ConfigError(field, where + ": the token cache " + cache_path.string() +
                                     " was written but does not read back; set TRAINBENCH_TOKEN_CACHE to another folder");
    return {std::move(cache), true};
}

}  // namespace trainbench
