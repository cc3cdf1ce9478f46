// train.init_from: the weights a run starts from instead of a fresh initialisation.
#include <filesystem>

#include "weights/hf_weights.h"
#include "model/transformer.h"
#include "trainbench/config_io.h"
#include "trainbench/hf_directory.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

std::string weightsFileOf(const std::string& path) {
    return fs::is_directory(path) ? (fs::path(path) / "model.safetensors").string() : path;
}

}  // namespace

NamedTensors readInitialWeights(const std::string& path, const ModelConfig& model) {
    if (isHuggingFaceDirectory(path)) return readHuggingFaceWeights(path, model);
    const std::string file = weightsFileOf(path);
    NamedTensors tensors = readSafetensors(file);
    Transformer shapes(model);
    NamedTensors out = stateDict(shapes);
    loadIntoStateDict(out, tensors, file);
    return out;
}

void checkInitialWeights(const ModelConfig& model, const std::string& path) {
    std::error_code error;
    if (!fs::exists(path, error))
        throw ConfigError("train.init_from", "train.init_from: " + path + " does not exist; name a Hugging Face "
                                             "directory, a checkpoint directory or a .safetensors file");
    if (isHuggingFaceDirectory(path)) {
        // Its config.json must describe the model section (what shapes the tensors).
        const ModelConfig theirs = readHuggingFaceConfig(path);
        const std::pair<const char*, std::pair<double, double>> fields[] = {
            {"vocab_size", {double(model.vocab_size), double(theirs.vocab_size)}},
            {"dim", {double(model.dim), double(theirs.dim)}},
            {"inter_dim", {double(model.inter_dim), double(theirs.inter_dim)}},
            {"moe_inter_dim", {double(model.moe_inter_dim), double(theirs.moe_inter_dim)}},
            {"n_layers", {double(model.n_layers), double(theirs.n_layers)}},
            {"n_dense_layers", {double(model.n_dense_layers), double(theirs.n_dense_layers)}},
            {"n_heads", {double(model.n_heads), double(theirs.n_heads)}},
            {"n_routed_experts", {double(model.n_routed_experts), double(theirs.n_routed_experts)}},
            {"n_shared_experts", {double(model.n_shared_experts), double(theirs.n_shared_experts)}},
            {"q_lora_rank", {double(model.q_lora_rank), double(theirs.q_lora_rank)}},
            {"kv_lora_rank", {double(model.kv_lora_rank), double(theirs.kv_lora_rank)}},
            {"qk_nope_head_dim", {double(model.qk_nope_head_dim), double(theirs.qk_nope_head_dim)}},
            {"qk_rope_head_dim", {double(model.qk_rope_head_dim), double(theirs.qk_rope_head_dim)}},
            {"v_head_dim", {double(model.v_head_dim), double(theirs.v_head_dim)}},
            {"gate_bias", {double(model.hasGateBias()), double(theirs.hasGateBias())}},
        };
        for (const auto& [field, values] : fields)
            if (values.first != values.second)
                throw ConfigError("train.init_from", "train.init_from: " + path + "/config.json has model." + field + " " +
                                                         std::to_string(int64_t(values.second)) + " but the config has " +
                                                         std::to_string(int64_t(values.first)) +
                                                         "; take the model section from it (`trainbench-cli init "
                                                         "--from-hf " + path + "`)");
        // Fewer modules than the directory holds leave the rest out (with a note); more cannot
        // start from it.
        if (model.n_mtp_depth > theirs.n_mtp_depth)
            throw ConfigError("model.n_mtp_depth",
                              "model.n_mtp_depth is " + std::to_string(model.n_mtp_depth) + " but " + path +
                                  " holds " + std::to_string(theirs.n_mtp_depth) +
                                  " multi-token-prediction module(s) (num_nextn_predict_layers); lower it to " +
                                  std::to_string(theirs.n_mtp_depth) + " to start from it");
        return;
    }
    const std::string file = weightsFileOf(path);
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const SafetensorsEntry& e : readSafetensorsEntries(file)) shapes[e.name] = e.shape;
    try {
        requireSameTensors(stateDict(Transformer(model)), shapes, file);
    } catch (const ConfigError& e) {
        throw ConfigError("train.init_from", std::string("train.init_from: ") + e.what());
    }
}

void loadWeightsInto(Transformer& model, const std::string& path) {
    loadIntoStateDict(stateDict(model), readInitialWeights(path, model->config()), path);
}

}  // namespace trainbench
