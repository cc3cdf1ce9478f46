// exportRunToTensorBoard: a stored run's points, events and config, merged by step into one file.
#include "tensorboard/tensorboard_export.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "tensorboard/run_summaries.h"

namespace trainbench::tensorboard {

std::string exportRunToTensorBoard(const StoredRun& run, const std::string& out_dir) {
    std::error_code error;
    std::filesystem::create_directories(out_dir, error);
    if (error || !std::filesystem::is_directory(out_dir))
        throw EventFileError(out_dir + ": cannot be created as a folder (" +
                             (error ? error.message() : std::string("a file of that name exists")) + ")");
    const std::filesystem::path folder(out_dir);
    const std::string final_path = (folder / eventFileName(std::time(nullptr))).string();
    // No "tfevents" in the name: a TensorBoard watching the folder never reads it half written.
    const std::string partial = (folder / (".trainbench-export-" + std::to_string(getpid()) + ".partial")).string();
    try {
        EventFileWriter file(partial);
        const double start = runStartUnixTime(run.created);
        writeConfig(file, run.config_json, start);
        // Points (ordered by step) and events (in the order they happened) merged by step, as the
        // run published them.
        const auto& points = run.points;
        const auto& events = run.events;
        size_t e = 0;
        for (const auto& point : points) {
            for (; e < events.size() && events[e].step < point.step; ++e) writeEvent(file, events[e], start);
            writePoint(file, point, start);
        }
        for (; e < events.size(); ++e) writeEvent(file, events[e], start);
        file.close();
        if (std::rename(partial.c_str(), final_path.c_str()) != 0)
            throw EventFileError(final_path + ": cannot be written (the rename from " + partial + " failed)");
    } catch (...) {
        std::remove(partial.c_str());
        throw;
    }
    return final_path;
}

}  // namespace trainbench::tensorboard
