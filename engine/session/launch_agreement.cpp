// The launch agreement: identities compared field by field, the first difference named.
#include "session/launch_agreement.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "comm/collectives.h"
#include "files/sha256.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// The program: every byte of the running executable (a few megabytes; the engine is linked in).
std::string programFingerprint() {
    try {
        return sha256OfFile("/proc/self/exe");
    } catch (const std::exception&) {
        return "unknown";
    }
}

// A data file: its size, and its first and last mebibyte (a corpus may be terabytes; a copy
// that differs anywhere near either end, or in length, is told apart).
nlohmann::json fileFingerprint(const std::string& path) {
    nlohmann::json out = {{"path", path}};
    std::error_code error;
    if (!fs::is_regular_file(path, error)) {
        out["bytes"] = fs::is_directory(path, error) ? "a folder" : "missing";
        return out;
    }
    const int64_t bytes = static_cast<int64_t>(fs::file_size(path, error));
    std::ifstream in(path, std::ios::binary);
    const int64_t edge = 1 << 20;
    Sha256 hash;
    std::vector<char> buffer(edge);
    auto read = [&](int64_t count) {
        in.read(buffer.data(), count);
        hash.update(buffer.data(), static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    };
    read(std::min(edge, bytes));
    if (bytes > edge) {
        in.clear();
        in.seekg(std::max(edge, bytes - edge));
        read(std::min(edge, bytes - edge));
    }
    out["bytes"] = bytes;
    out["fingerprint"] = hash.hexDigest();
    return out;
}

// The first difference between two JSON values, as "path: a vs b" (config fields by their
// dotted names).
std::string firstDifference(const nlohmann::json& mine, const nlohmann::json& theirs, const std::string& path) {
    if (mine.is_object() && theirs.is_object()) {
        for (const auto& [key, value] : theirs.items()) {
            const std::string at = path.empty() ? key : path + "." + key;
            if (!mine.contains(key)) return at + ": absent vs " + value.dump();
            if (auto found = firstDifference(mine[key], value, at); !found.empty()) return found;
        }
        for (const auto& [key, value] : mine.items())
            if (!theirs.contains(key)) return (path.empty() ? key : path + "." + key) + ": " + value.dump() + " vs absent";
        return "";
    }
    if (mine.is_array() && theirs.is_array() && mine.size() == theirs.size()) {
        for (size_t i = 0; i < mine.size(); ++i)
            if (auto found = firstDifference(mine[i], theirs[i], path + "[" + std::to_string(i) + "]"); !found.empty())
                return found;
        return "";
    }
    if (mine == theirs) return "";
    return path + ": " + mine.dump() + " vs " + theirs.dump();
}

}  // namespace

std::string launchIdentity(const RunConfig& config) {
    nlohmann::json identity;
    identity["config"] = nlohmann::json::parse(runConfigToJson(config, -1));
    identity["program"] = programFingerprint();
    nlohmann::json data = nlohmann::json::array();
    for (const std::string& path : {config.data.path, config.data.val_path, config.data.tokenizer})
        if (!path.empty()) data.push_back(fileFingerprint(path));
    identity["data"] = data;
    return identity.dump();
}

void requireSameLaunch(c10d::Store& store, const ProcessLaunch& launch, const std::string& identity,
                       std::chrono::milliseconds timeout) {
    store.set("launch/identity/" + std::to_string(launch.rank), std::vector<uint8_t>(identity.begin(), identity.end()));
    std::vector<nlohmann::json> all;
    for (int r = 0; r < launch.world_size; ++r) {
        const std::string key = "launch/identity/" + std::to_string(r);
        try {
            store.wait({key}, timeout);
        } catch (const std::exception&) {
            throw CollectiveAborted("rank " + std::to_string(launch.rank) + ": rank " + std::to_string(r) +
                                    " did not say what it trains within runtime.comm_timeout_s");
        }
        const auto bytes = store.get(key);
        all.push_back(nlohmann::json::parse(std::string(bytes.begin(), bytes.end())));
    }
    // Rank 0 may serve the store (no agent) and leave at once on a refusal: it waits until every
    // rank has read what it needs, so each is refused with the difference, not a lost store.
    int64_t read = store.add("launch/identities_read", 1);
    const auto start = std::chrono::steady_clock::now();
    while (launch.rank == 0 && !launch.agent_store && read < launch.world_size &&
           std::chrono::steady_clock::now() - start < timeout) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        read = store.add("launch/identities_read", 0);
    }
    // Every rank compares every rank with rank 0, in rank order: all name the same difference.
    for (int r = 1; r < launch.world_size; ++r) {
        const auto& lead = all[0];
        const auto& other = all[size_t(r)];
        const std::string who = "rank " + std::to_string(r) + " of " + std::to_string(launch.world_size);
        if (auto diff = firstDifference(other["config"], lead["config"], ""); !diff.empty()) {
            const std::string field = diff.substr(0, diff.find(':'));
            throw ConfigError(field, who + " was started with another config than rank 0: " + diff +
                                         " (rank " + std::to_string(r) + "'s value first); every rank of a launch "
                                         "must read the same config file and --set overrides");
        }
        if (other["program"] != lead["program"])
            throw ConfigError("", who + " runs another build of trainbench-cli than rank 0 (program " +
                                      other["program"].get<std::string>() + " vs " + lead["program"].get<std::string>() +
                                      "): start every rank with the same binary");
        if (auto diff = firstDifference(other["data"], lead["data"], "data"); !diff.empty())
            throw ConfigError("data.path", who + " reads other data than rank 0 (" + diff +
                                               ", rank " + std::to_string(r) +
                                               "'s first): every rank needs the same files");
    }
}

}  // namespace trainbench
