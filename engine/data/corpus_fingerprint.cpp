// CorpusIdentity: stat and sampled content per file, hashed with how the files are read.
#include "data/corpus_fingerprint.h"

#include <sys/stat.h>

#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "files/sha256.h"

namespace trainbench {
namespace {

constexpr int64_t kBlock = 4096;
constexpr int64_t kBlocks = 16;

std::string sampledContentHash(const std::filesystem::path& file, int64_t size) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return "unreadable";
    Sha256 hash;
    std::vector<char> block(kBlock);
    auto take = [&](int64_t offset, int64_t bytes) {
        in.seekg(offset);
        in.read(block.data(), bytes);
        hash.update(block.data(), static_cast<size_t>(in.gcount()));
    };
    if (size <= kBlock * kBlocks) {
        for (int64_t at = 0; at < size; at += kBlock) take(at, std::min(kBlock, size - at));
    } else {
        for (int64_t b = 0; b < kBlocks; ++b) take(b * (size - kBlock) / (kBlocks - 1), kBlock);
    }
    return hash.hexDigest();
}

}  // namespace

CorpusIdentity corpusIdentity(const std::vector<std::filesystem::path>& files, const std::string& reading) {
    Sha256 key;
    key.update(reading.data(), reading.size());
    nlohmann::json described = nlohmann::json::array();
    for (const std::filesystem::path& file : files) {
        std::error_code error;
        const std::string path = std::filesystem::absolute(file, error).lexically_normal().string();
        key.update(path.data(), path.size() + 1);  // with its terminating NUL: paths never run together
        struct stat info {};
        if (::stat(file.c_str(), &info) != 0) {
            described.push_back({{"path", path}, {"missing", true}});
            continue;
        }
        described.push_back({{"path", path},
                             {"size", static_cast<int64_t>(info.st_size)},
                             {"mtime_ns", int64_t(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec},
                             {"ctime_ns", int64_t(info.st_ctim.tv_sec) * 1000000000 + info.st_ctim.tv_nsec},
                             {"device", static_cast<uint64_t>(info.st_dev)},
                             {"inode", static_cast<uint64_t>(info.st_ino)},
                             {"sample", sampledContentHash(file, static_cast<int64_t>(info.st_size))}});
    }
    return {key.hexDigest(), nlohmann::json{{"reading", reading}, {"files", described}}.dump()};
}

}  // namespace trainbench
