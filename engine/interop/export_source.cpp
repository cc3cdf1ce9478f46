// Which weights `export-hf` writes: a run's checkpoint of a given step, verified first.
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "train/checkpoint.h"
#include "trainbench/config_io.h"
#include "trainbench/hf_interop.h"

namespace trainbench {

namespace fs = std::filesystem;

HfExportSource exportSourceOfCheckpoint(const std::string& checkpoint_dir) {
    const TrainerState state = readTrainerState(checkpoint_dir);  // verifies trainer.json's checksum
    const RunConfig config = parseRunConfig(state.config_json, checkpoint_dir + "/trainer.json");
    HfExportSource source;
    source.model = config.model;
    source.weights = (fs::path(checkpoint_dir) / "model.safetensors").string();
    if (config.data.source == "text") source.tokenizer = config.data.tokenizer;
    return source;
}

std::string checkpointDirectoryOfStep(const std::string& folder, int64_t step) {
    std::vector<std::string> skipped;
    if (step <= 0) {
        auto newest = newestValidCheckpoint(folder, skipped);
        if (!newest) throw ConfigError("", folder + ": the run has no valid checkpoint to export");
        return newest->path;
    }
    char name[32];
    std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
    const fs::path dir = fs::path(folder) / name;
    std::error_code error;
    if (!fs::is_directory(dir, error)) {
        std::vector<long long> present;
        if (fs::is_directory(folder, error))
            for (const auto& entry : fs::directory_iterator(folder, error)) {
                const std::string n = entry.path().filename().string();
                if (n.rfind("step-", 0) == 0 && n.size() == 13 && n.find('.') == std::string::npos)
                    present.push_back(std::atoll(n.c_str() + 5));
            }
        std::sort(present.begin(), present.end());
        std::string steps;
        for (long long s : present) steps += (steps.empty() ? "" : ", ") + std::to_string(s);
        throw ConfigError("--step", "--step " + std::to_string(step) + ": the run has no checkpoint of that step (" +
                                        (steps.empty() ? std::string("it has none") : "it has steps " + steps) + ")");
    }
    readCheckpoint(dir.string());  // verified whole: a corrupt one is refused naming its file
    return dir.string();
}

}  // namespace trainbench
