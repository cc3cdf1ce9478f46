// The data files of a save_to_disk folder, from its state.json.
#include "data/hf_dataset_records.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "trainbench/config_io.h"

namespace trainbench {

std::vector<std::filesystem::path> hfDatasetFiles(const std::string& path, const std::string& field) {
    namespace fs = std::filesystem;
    const std::string where = field + " (\"" + path + "\")";
    std::error_code error;
    const fs::path folder(path);
    if (!fs::is_directory(folder, error))
        throw ConfigError(field, where + ": not a folder; data.source \"hf_dataset\" reads the folder a dataset's "
                                         "save_to_disk() wrote");
    if (std::ifstream dict(folder / "dataset_dict.json"); dict) {
        std::string splits;
        try {
            const nlohmann::json listed = nlohmann::json::parse(dict);  // kept: the loop reads into it
            for (const auto& split : listed.at("splits")) splits += (splits.empty() ? "" : ", ") + split.get<std::string>();
        } catch (const std::exception&) {
            splits = "(dataset_dict.json cannot be read)";
        }
        throw ConfigError(field, where + ": a DatasetDict of splits " + splits + "; point " + field +
                                     " at one split's folder, e.g. \"" + (folder / "train").string() + "\"");
    }
    std::ifstream state_file(folder / "state.json");
    if (!state_file)
        throw ConfigError(field, where + ": has no state.json; data.source \"hf_dataset\" reads the folder a "
                                         "dataset's save_to_disk() wrote (state.json, dataset_info.json, data-*.arrow)");
    std::vector<fs::path> files;
    try {
        const nlohmann::json state = nlohmann::json::parse(state_file);
        for (const auto& entry : state.at("_data_files")) files.push_back(folder / entry.at("filename").get<std::string>());
    } catch (const std::exception& e) {
        throw ConfigError(field, where + ": state.json does not list the data files (\"_data_files\": " +
                                     std::string(e.what()) + "); save the dataset again with save_to_disk()");
    }
    if (files.empty()) throw ConfigError(field, where + ": state.json lists no data files; the dataset is empty");
    for (const fs::path& file : files)
        if (!fs::is_regular_file(file, error))
            throw ConfigError(field, where + ": state.json names \"" + file.filename().string() +
                                         "\", which is not there; copy the whole folder, or save the dataset again");
    return files;
}

}  // namespace trainbench
