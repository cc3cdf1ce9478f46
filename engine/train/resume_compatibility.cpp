// Resume compatibility: compares the sections a checkpoint depends on, field by field.
#include "train/resume_compatibility.h"

#include <nlohmann/json.hpp>

#include "trainbench/config_io.h"

namespace trainbench {
namespace {

[[noreturn]] void refuse(const std::string& field, const std::string& now, const std::string& then,
                         const std::string& checkpoint_path) {
    throw ConfigError(field, field + " is " + now + " but the checkpoint " + checkpoint_path + " was trained with " +
                                 then + "; a resumed run must keep it (start a new run to change it)");
}

}  // namespace

void requireResumable(const RunConfig& config, const std::string& checkpoint_config_json,
                      const std::string& checkpoint_path) {
    const RunConfig then = parseRunConfig(checkpoint_config_json, checkpoint_path + "/trainer.json");
    // Compare through the canonical JSON so every field, present and future, is covered.
    const nlohmann::json now_json = nlohmann::json::parse(runConfigToJson(config));
    const nlohmann::json then_json = nlohmann::json::parse(runConfigToJson(then));
    for (const char* section : {"model", "data"})
        for (const auto& [key, value] : now_json.at(section).items()) {
            const nlohmann::json before = then_json.at(section).value(key, nlohmann::json());
            if (value != before) refuse(std::string(section) + "." + key, value.dump(), before.dump(), checkpoint_path);
        }
    // The batch schedule and the data cursor it computes depend on these too.
    for (const char* key : {"seq_len", "seed", "loss_normalization", "batch_policy", "batch_ramp_start",
                            "batch_ramp_tokens", "lr_batch_rule", "batch_adapt_threshold", "batch_adapt_dwell_tokens",
                            "batch_adapt_factor", "batch_adapt_max_accumulation"}) {
        const auto& value = now_json.at("train").at(key);
        const auto& before = then_json.at("train").at(key);
        if (value != before) refuse(std::string("train.") + key, value.dump(), before.dump(), checkpoint_path);
    }
    // A ramp rounds every step's batch to a multiple of m x W, an adaptive batch grows in them: a
    // resumed run keeps that unit.
    const int64_t unit = config.train.micro_batch_size * config.runtime.world_size;
    const int64_t unit_then = then.train.micro_batch_size * then.runtime.world_size;
    if (batchPolicy(then.train) != BatchPolicy::Fixed && unit != unit_then)
        refuse("train.micro_batch_size", std::to_string(unit) + " sequences a step (micro_batch_size x world_size)",
               std::to_string(unit_then) + " under train.batch_policy " + then.train.batch_policy, checkpoint_path);
    if (config.globalBatch() != then.globalBatch())
        refuse("train.global_batch_size",
               std::to_string(config.globalBatch()) + " (micro_batch_size x gradient_accumulation_steps x world_size)",
               std::to_string(then.globalBatch()), checkpoint_path);
}

}  // namespace trainbench
