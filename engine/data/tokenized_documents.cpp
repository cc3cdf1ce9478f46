// Tokenising documents: contiguous runs of documents per thread, then one cache file per corpus.
#include "data/tokenized_documents.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <tuple>

#include "trainbench/data_folder.h"
#include "files/sha256.h"
#include "trainbench/config_io.h"
#include "trainbench/tokenize_progress.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

std::mutex g_progress_mutex;
TokenizeProgress g_progress;

void report(const std::string& what, int64_t done, int64_t total) {
    std::lock_guard<std::mutex> lock(g_progress_mutex);
    if (g_progress) g_progress(what, done, total);
}

// The cache file: "TBTOKENS2", the document count, the id count, whether counted marks follow
// (0 or 1), the starts, the ids, then the marks when present (host byte order: the cache is
// this machine's).
constexpr char kMagic[] = "TBTOKENS2";

bool readCache(const fs::path& path, Documents& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    char magic[sizeof kMagic] = {};
    int64_t docs = 0, ids = 0, marked = 0;
    in.read(magic, sizeof kMagic);
    in.read(reinterpret_cast<char*>(&docs), 8);
    in.read(reinterpret_cast<char*>(&ids), 8);
    in.read(reinterpret_cast<char*>(&marked), 8);
    if (!in || std::memcmp(magic, kMagic, sizeof kMagic) != 0 || docs < 0 || ids < 0 || (marked != 0 && marked != 1))
        return false;
    std::error_code error;
    const uint64_t expected = sizeof kMagic + 24 + uint64_t(docs + 1) * 8 + uint64_t(ids) * (4 + marked);
    if (fs::file_size(path, error) != expected) return false;
    out.starts.resize(docs + 1);
    out.ids.resize(ids);
    out.counted.resize(marked ? ids : 0);
    in.read(reinterpret_cast<char*>(out.starts.data()), (docs + 1) * 8);
    in.read(reinterpret_cast<char*>(out.ids.data()), ids * 4);
    if (marked) in.read(reinterpret_cast<char*>(out.counted.data()), ids);
    return static_cast<bool>(in) && out.starts.front() == 0 && out.starts.back() == ids;
}

void writeCache(const fs::path& path, const Documents& d) {
    std::error_code error;
    fs::create_directories(path.parent_path(), error);
    const fs::path partial = path.string() + ".partial." + std::to_string(::getpid());
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        const int64_t docs = static_cast<int64_t>(d.starts.size()) - 1, ids = static_cast<int64_t>(d.ids.size());
        const int64_t marked = d.counted.empty() ? 0 : 1;
        out.write(kMagic, sizeof kMagic);
        out.write(reinterpret_cast<const char*>(&docs), 8);
        out.write(reinterpret_cast<const char*>(&ids), 8);
        out.write(reinterpret_cast<const char*>(&marked), 8);
        out.write(reinterpret_cast<const char*>(d.starts.data()), (docs + 1) * 8);
        out.write(reinterpret_cast<const char*>(d.ids.data()), ids * 4);
        if (marked) out.write(reinterpret_cast<const char*>(d.counted.data()), ids);
        out.flush();
        if (!out) {
            fs::remove(partial, error);
            return;
        }
    }
    fs::rename(partial, path, error);
    if (error) fs::remove(partial, error);
}

}  // namespace

std::unique_ptr<Tokenizer> openDataTokenizer(const std::string& path) {
    try {
        return openTokenizer(path);
    } catch (const TokenizerError& e) {
        throw ConfigError("data.tokenizer", std::string("data.tokenizer: ") + e.what());
    }
}

void setTokenizeProgress(TokenizeProgress progress) {
    std::lock_guard<std::mutex> lock(g_progress_mutex);
    g_progress = std::move(progress);
}

std::string tokenCacheFolder() {
    if (const char* folder = std::getenv("TRAINBENCH_TOKEN_CACHE"); folder && *folder) return folder;
    return (fs::path(dataFolder()) / "token-cache").string();
}

Documents tokenizeDocuments(const Documents& bytes, const Tokenizer& tokenizer, int32_t end_token,
                            const std::string& tokenizer_hash, const std::string& what) {
    // The key: the tokenizer file and the corpus bytes with their document ends.
    Sha256 hash;
    hash.update(tokenizer_hash.data(), tokenizer_hash.size());
    hash.update(&end_token, sizeof end_token);
    const std::vector<uint8_t> raw(bytes.ids.begin(), bytes.ids.end());
    hash.update(raw.data(), raw.size());
    hash.update(bytes.starts.data(), bytes.starts.size() * sizeof(int64_t));
    if (!bytes.counted.empty()) hash.update(bytes.counted.data(), bytes.counted.size());
    const fs::path cache = fs::path(tokenCacheFolder()) / (hash.hexDigest() + ".tokens");
    Documents out;
    if (readCache(cache, out)) return out;

    const int64_t docs = static_cast<int64_t>(bytes.starts.size()) - 1;
    const int64_t total = static_cast<int64_t>(bytes.ids.size());
    const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), docs));
    // Contiguous runs of about equal bytes, so the ids come back in order by concatenation.
    std::vector<int64_t> first_doc{0};
    for (int64_t t = 1; t < threads; ++t) {
        const int64_t target = total * t / threads;
        int64_t d = first_doc.back();
        while (d < docs && bytes.starts[d] < target) ++d;
        first_doc.push_back(d);
    }
    first_doc.push_back(docs);
    std::vector<Documents> parts(threads);
    std::vector<std::string> errors(threads);
    std::atomic<int64_t> done{0};
    std::vector<std::thread> workers;
    for (int64_t t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            try {
                Documents& part = parts[t];
                part.starts.push_back(0);
                const bool marked = !bytes.counted.empty();
                for (int64_t d = first_doc[t]; d < first_doc[t + 1]; ++d) {
                    const int64_t begin = bytes.starts[d], end = bytes.starts[d + 1] - 1;  // without the end byte
                    // A pair's prompt (its leading uncounted bytes) and completion are tokenised
                    // apart, so no token straddles the two and the prompt's tokens are exact.
                    int64_t prompt_end = begin;
                    while (marked && prompt_end < end && bytes.counted[prompt_end] == 0) ++prompt_end;
                    for (const auto& [from, to, counts] :
                         {std::tuple{begin, prompt_end, uint8_t{0}}, std::tuple{prompt_end, end, uint8_t{1}}}) {
                        if (from == to) continue;
                        std::vector<int32_t> ids = tokenizer.encode(std::string(raw.begin() + from, raw.begin() + to));
                        part.ids.insert(part.ids.end(), ids.begin(), ids.end());
                        if (marked) part.counted.insert(part.counted.end(), ids.size(), counts);
                    }
                    part.ids.push_back(end_token);
                    if (marked) part.counted.push_back(1);
                    part.starts.push_back(static_cast<int64_t>(part.ids.size()));
                    done += end - begin + 1;
                }
            } catch (const std::exception& e) {
                errors[t] = e.what();
            }
        });
    std::atomic<bool> finished{false};
    std::thread reporter([&] {
        while (!finished) {
            report(what, done.load(), total);
            for (int i = 0; i < 20 && !finished; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    });
    for (auto& w : workers) w.join();
    finished = true;
    reporter.join();
    for (const auto& e : errors)
        if (!e.empty()) throw ConfigError("data.path", what + ": cannot be tokenised: " + e);
    report(what, total, total);
    out.starts.push_back(0);
    for (auto& part : parts) {
        const int64_t offset = static_cast<int64_t>(out.ids.size());
        out.ids.insert(out.ids.end(), part.ids.begin(), part.ids.end());
        out.counted.insert(out.counted.end(), part.counted.begin(), part.counted.end());
        for (size_t i = 1; i < part.starts.size(); ++i) out.starts.push_back(offset + part.starts[i]);
    }
    writeCache(cache, out);
    return out;
}

}  // namespace trainbench
