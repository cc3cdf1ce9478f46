// Checkpoint files: safetensors for tensors, JSON for the trainer state, SHA-256 for integrity.
#include "train/checkpoint.h"

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "files/sha256.h"
#include "trainbench/checkpoints.h"
#include "files/remove_tree.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace fs = std::filesystem;
namespace {

constexpr const char* kPrefix = "step-";

std::string stepName(int64_t step) {
    char name[32];
    std::snprintf(name, sizeof(name), "%s%08lld", kPrefix, static_cast<long long>(step));
    return name;
}

void writeFileSynced(const fs::path& path, const std::string& text) {
    FILE* out = std::fopen(path.c_str(), "wb");
    if (!out) throw std::runtime_error(path.string() + ": cannot write");
    bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
    ok = std::fflush(out) == 0 && ok;
    ok = ::fsync(fileno(out)) == 0 && ok;
    ok = std::fclose(out) == 0 && ok;
    if (!ok) throw std::runtime_error(path.string() + ": writing failed");
}

void syncDirectory(const fs::path& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

std::string readText(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError("", path.string() + ": missing; the checkpoint is incomplete");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// The files of one checkpoint, written into `partial` (renamed into place by the caller).
void writeCheckpointFiles(const fs::path& partial, const NamedTensors& model_state, const NamedTensors& optimizer_state,
                          const TrainerState& state);

}  // namespace

std::string writeCheckpoint(const std::string& folder, Transformer& model, const NamedTensors& optimizer_state,
                            const TrainerState& state) {
    return writeCheckpoint(folder, stateDict(model), optimizer_state, state);
}

std::string writeCheckpoint(const std::string& folder, const NamedTensors& model_state, const NamedTensors& optimizer_state,
                            const TrainerState& state) {
    const fs::path final_dir = fs::path(folder) / stepName(state.step);
    const fs::path partial = fs::path(folder) / (stepName(state.step) + ".partial");
    fs::create_directories(folder);
    removeTree(partial);
    try {
        writeCheckpointFiles(partial, model_state, optimizer_state, state);
    } catch (...) {
        removeTree(partial);  // a failed write leaves nothing half-written beside the good ones
        throw;
    }
    removeTree(final_dir);
    fs::rename(partial, final_dir);
    syncDirectory(folder);
    return final_dir.string();
}

namespace {

void writeCheckpointFiles(const fs::path& partial, const NamedTensors& model_state, const NamedTensors& optimizer_state,
                          const TrainerState& state) {
    fs::create_directories(partial);

    writeSafetensors((partial / "model.safetensors").string(), model_state, {{"format", "pt"}});
    writeSafetensors((partial / "optimizer.safetensors").string(), optimizer_state, {{"format", "pt"}});

    nlohmann::json trainer = {
        {"step", state.step},
        {"tokens", state.tokens},
        {"last_loss", state.last_loss},
        {"data_cursor", {{"optimizer_step", state.step}}},
        {"config", nlohmann::json::parse(state.config_json)},
        {"files",
         {{"model.safetensors", sha256OfFile((partial / "model.safetensors").string())},
          {"optimizer.safetensors", sha256OfFile((partial / "optimizer.safetensors").string())}}},
    };
    if (!state.noise_scale.empty()) trainer["noise_scale"] = state.noise_scale;
    if (!state.batch_changes.empty() || state.batch_dwell_tokens > 0) {
        nlohmann::json changes = nlohmann::json::array();
        for (const auto& [step, batch] : state.batch_changes) changes.push_back({step, batch});
        trainer["batch_schedule"] = {{"changes", changes}, {"dwell_tokens", state.batch_dwell_tokens}};
    }
    const std::string text = trainer.dump(2);
    writeFileSynced(partial / "trainer.json", text);
    Sha256 hash;
    hash.update(text.data(), text.size());
    writeFileSynced(partial / "trainer.json.sha256", hash.hexDigest() + "\n");
    syncDirectory(partial);
}

}  // namespace

namespace {

// trainer.json, verified against its own checksum, and the checksums it records for the tensors.
TrainerState readVerifiedTrainerJson(const fs::path& dir, std::map<std::string, std::string>* file_hashes) {
    const std::string text = readText(dir / "trainer.json");
    std::string recorded = readText(dir / "trainer.json.sha256");
    recorded.erase(std::remove_if(recorded.begin(), recorded.end(), ::isspace), recorded.end());
    Sha256 hash;
    hash.update(text.data(), text.size());
    if (hash.hexDigest() != recorded)
        throw ConfigError("", (dir / "trainer.json").string() + ": checksum mismatch; the checkpoint is corrupt");
    return parseTrainerJson(text, (dir / "trainer.json").string(), file_hashes);
}

}  // namespace

TrainerState readTrainerState(const std::string& path) { return readVerifiedTrainerJson(fs::path(path), nullptr); }

namespace {

// trainer.json and every file it records, against their checksums (no tensor read).
TrainerState verifyCheckpoint(const fs::path& dir) {
    std::map<std::string, std::string> file_hashes;
    TrainerState state = readVerifiedTrainerJson(dir, &file_hashes);
    for (const auto& [file, expected] : file_hashes)
        if (sha256OfFile((dir / file).string()) != expected)
            throw ConfigError("", (dir / file).string() + ": checksum mismatch; the checkpoint is corrupt");
    return state;
}

}  // namespace

Checkpoint readCheckpoint(const std::string& path) {
    const fs::path dir(path);
    Checkpoint c;
    c.path = path;
    try {
        c.state = verifyCheckpoint(dir);
        c.model = readSafetensors((dir / "model.safetensors").string());
        c.optimizer = readSafetensors((dir / "optimizer.safetensors").string());
        return c;
    } catch (const std::runtime_error& e) {
        if (dynamic_cast<const ConfigError*>(&e)) throw;
        throw ConfigError("", path + ": " + e.what());
    }
}

namespace {

// Complete checkpoint directories, newest step first.
std::vector<std::pair<int64_t, fs::path>> listCheckpoints(const std::string& folder) {
    std::vector<std::pair<int64_t, fs::path>> found;
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) return found;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_directory() || name.rfind(kPrefix, 0) != 0 || name.find('.') != std::string::npos) continue;
        try {
            found.emplace_back(std::stoll(name.substr(5)), entry.path());
        } catch (const std::exception&) {
        }
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    return found;
}

}  // namespace

std::optional<Checkpoint> newestValidCheckpoint(const std::string& folder, std::vector<std::string>& skipped) {
    for (const auto& [step, path] : listCheckpoints(folder)) {
        try {
            return readCheckpoint(path.string());
        } catch (const std::exception& e) {
            skipped.push_back(e.what());
        }
    }
    return std::nullopt;
}

void pruneCheckpoints(const std::string& folder, int64_t keep) {
    auto all = listCheckpoints(folder);
    for (size_t i = static_cast<size_t>(std::max<int64_t>(keep, 1)); i < all.size(); ++i) removeTree(all[i].second);
}

}  // namespace trainbench

namespace trainbench {

std::optional<CheckpointInfo> checkpointToResume(const std::string& folder, std::vector<std::string>& skipped,
                                                 int64_t recorded_through) {
    // Verified by their checksums only: the run reads the tensors when it resumes.
    std::optional<CheckpointInfo> ahead;  // the earliest valid one past recorded_through so far
    for (const auto& [step, path] : listCheckpoints(folder)) {
        try {
            CheckpointInfo found{path.string(), verifyCheckpoint(path).step};
            if (found.step <= recorded_through) return found;
            ahead = found;
        } catch (const std::exception& e) {
            skipped.push_back(e.what());
        }
    }
    return ahead;
}

CheckpointInfo checkpointOfStep(const std::string& folder, int64_t step) {
    if (step <= 0) {
        std::vector<std::string> skipped;
        if (auto newest = checkpointToResume(folder, skipped)) return *newest;
        throw ConfigError("", folder + ": the run has no valid checkpoint" +
                                  (skipped.empty() ? std::string() : " (" + skipped.front() + ")"));
    }
    const auto all = listCheckpoints(folder);
    for (const auto& [found, path] : all)
        if (found == step) return CheckpointInfo{path.string(), verifyCheckpoint(path).step};
    std::string steps;
    for (auto it = all.rbegin(); it != all.rend(); ++it) steps += (steps.empty() ? "" : ", ") + std::to_string(it->first);
    throw ConfigError("--step", "--step " + std::to_string(step) + ": the run has no checkpoint of that step (" +
                                    (steps.empty() ? std::string("it has none") : "it has steps " + steps) + ")");
}

}  // namespace trainbench
