// trainer.json reader: every field checked, every failure a ConfigError naming the file.
#include "train/trainer_state.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "trainbench/config_io.h"

namespace trainbench {
namespace {

[[noreturn]] void malformed(const std::string& origin, const std::string& what) {
    throw ConfigError("", origin + ": malformed (" + what + "); the checkpoint is damaged, use an earlier one");
}

int64_t count(const nlohmann::json& trainer, const char* key, const std::string& origin) {
    if (!trainer.contains(key) || !trainer[key].is_number_integer() || trainer[key].get<int64_t>() < 0)
        malformed(origin, std::string("\"") + key + "\" must be a non-negative integer");
    return trainer[key].get<int64_t>();
}

bool isSha256(const nlohmann::json& value) {
    if (!value.is_string() || value.get_ref<const std::string&>().size() != 64) return false;
    for (char c : value.get_ref<const std::string&>())
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

}  // namespace

TrainerState parseTrainerJson(const std::string& text, const std::string& origin,
                              std::map<std::string, std::string>* file_hashes) {
    nlohmann::json trainer;
    try {
        trainer = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {  // syntax, or a number beyond range
        malformed(origin, e.what());
    }
    if (!trainer.is_object()) malformed(origin, "not a JSON object");
    TrainerState state;
    state.step = count(trainer, "step", origin);
    state.tokens = count(trainer, "tokens", origin);
    // A run whose every step was skipped has no loss yet: JSON null.
    if (!trainer.contains("last_loss") || !(trainer["last_loss"].is_number() || trainer["last_loss"].is_null()))
        malformed(origin, "\"last_loss\" must be a number or null");
    state.last_loss = trainer["last_loss"].is_number() ? trainer["last_loss"].get<double>() : std::nan("");
    if (!trainer.contains("config") || !trainer["config"].is_object())
        malformed(origin, "\"config\" must be the run config object");
    state.config_json = trainer["config"].dump();
    if (trainer.contains("noise_scale")) {
        const auto& noise = trainer["noise_scale"];
        if (!noise.is_array()) malformed(origin, "\"noise_scale\" must be a list of numbers");
        for (const auto& v : noise) {
            if (!v.is_number()) malformed(origin, "\"noise_scale\" must be a list of numbers");
            state.noise_scale.push_back(v.get<double>());
        }
    }
    if (trainer.contains("batch_schedule")) {
        const auto& schedule = trainer["batch_schedule"];
        const char* what = "\"batch_schedule\" must hold \"changes\" ([step, sequences] pairs in step order) and "
                           "\"dwell_tokens\"";
        if (!schedule.is_object() || !schedule.contains("changes") || !schedule["changes"].is_array())
            malformed(origin, what);
        state.batch_dwell_tokens = count(schedule, "dwell_tokens", origin);
        for (const auto& change : schedule["changes"]) {
            if (!change.is_array() || change.size() != 2 || !change[0].is_number_integer() ||
                !change[1].is_number_integer() || change[0].get<int64_t>() < 1 || change[1].get<int64_t>() < 1 ||
                (!state.batch_changes.empty() && change[0].get<int64_t>() <= state.batch_changes.back().first))
                malformed(origin, what);
            state.batch_changes.emplace_back(change[0].get<int64_t>(), change[1].get<int64_t>());
        }
    }
    if (file_hashes) {
        for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
            const auto files = trainer.find("files");
            if (files == trainer.end() || !files->is_object() || !files->contains(file) || !isSha256((*files)[file]))
                malformed(origin, std::string("\"files\" must record the SHA-256 of ") + file);
            (*file_hashes)[file] = (*files)[file].get<std::string>();
        }
    }
    return state;
}

}  // namespace trainbench
