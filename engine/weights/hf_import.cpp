// Reading a Hugging Face directory: its shards, either expert layout, fp8 blocks, into the state dict.
#include "weights/hf_weights.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "weights/hf_names.h"
#include "model/mtp_module.h"
#include "model/transformer.h"
#include "trainbench/config_io.h"
#include "trainbench/hf_directory.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// The weight files of a directory: the index's, or the one model.safetensors.
std::vector<std::string> weightFiles(const std::string& dir) {
    const fs::path index = fs::path(dir) / "model.safetensors.index.json";
    if (fs::is_regular_file(index)) {
        std::ifstream in(index);
        nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
        if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
            throw ConfigError("", index.string() + ": not a safetensors index (no weight_map object)");
        std::set<std::string> files;
        for (const auto& [name, file] : j["weight_map"].items()) {
            if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos)
                throw ConfigError("", index.string() + ": the file of '" + name + "' is not a file name in the directory");
            files.insert(file.get<std::string>());
        }
        std::vector<std::string> out;
        for (const auto& f : files) {
            if (!fs::is_regular_file(fs::path(dir) / f))
                throw ConfigError("", index.string() + " names " + f + ", which is not in " + dir);
            out.push_back((fs::path(dir) / f).string());
        }
        return out;
    }
    const fs::path single = fs::path(dir) / "model.safetensors";
    if (!fs::is_regular_file(single))
        throw ConfigError("", dir + ": no model.safetensors or model.safetensors.index.json; a Hugging Face "
                                    "directory holds its weights in one of them (.bin files are not read: convert them "
                                    "to safetensors)");
    return {single.string()};
}

// The block size of an fp8 checkpoint's weight_scale_inv (quantization_config.weight_block_size).
std::pair<int64_t, int64_t> quantizationBlock(const std::string& dir) {
    std::ifstream in(fs::path(dir) / "config.json");
    nlohmann::json c = nlohmann::json::parse(in, nullptr, false);
    std::pair<int64_t, int64_t> block{128, 128};
    if (!c.is_discarded() && c.contains("quantization_config") && c["quantization_config"].is_object()) {
        const auto& q = c["quantization_config"];
        const std::string method = q.value("quant_method", std::string());
        if (method != "fp8")
            throw ConfigError("", dir + "/config.json: quantization_config.quant_method " + q.value("quant_method", std::string("?")) +
                                      " is not read (fp8 block quantisation is; others: dequantise the checkpoint first)");
        if (q.contains("weight_block_size") && q["weight_block_size"].is_array() && q["weight_block_size"].size() == 2)
            block = {q["weight_block_size"][0].get<int64_t>(), q["weight_block_size"][1].get<int64_t>()};
    }
    return block;
}

// The layer index of "model.layers.L...." (-1 for other names).
int64_t layerOf(const std::string& hf_name) {
    if (hf_name.rfind("model.layers.", 0) != 0) return -1;
    const size_t end = hf_name.find('.', 13);
    if (end == std::string::npos) return -1;
    try {
        return std::stoll(hf_name.substr(13, end - 13));
    } catch (const std::exception&) {
        return -1;
    }
}

}  // namespace

NamedTensors readHuggingFaceWeights(const std::string& dir, const ModelConfig& model, std::vector<std::string>* notes) {
    std::map<std::string, torch::Tensor> found;
    std::map<std::string, std::string> file_of;
    for (const std::string& file : weightFiles(dir))
        for (auto& [name, tensor] : readSafetensors(file)) {
            file_of[name] = file;
            found[name] = std::move(tensor);
        }
    // fp8 blocks: each weight times its block's inverse scale (DeepSeek-V3's published storage).
    std::optional<std::pair<int64_t, int64_t>> block;
    for (auto it = found.begin(); it != found.end();) {
        const std::string& name = it->first;
        const std::string suffix = "_scale_inv";
        if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
            ++it;
            continue;
        }
        if (!block) block = quantizationBlock(dir);
        const std::string weight_name = name.substr(0, name.size() - suffix.size());
        auto weight = found.find(weight_name);
        if (weight == found.end())
            throw ConfigError("", file_of[name] + ": '" + name + "' scales no weight ('" + weight_name + "' is missing)");
        const torch::Tensor& w = weight->second;
        const torch::Tensor& scale = it->second;
        if (w.dim() != 2 || scale.dim() != 2 || scale.size(0) != (w.size(0) + block->first - 1) / block->first ||
            scale.size(1) != (w.size(1) + block->second - 1) / block->second)
            throw ConfigError("", file_of[name] + ": '" + name + "' " + shapeText(scale.sizes()) + " does not tile '" +
                                      weight_name + "' " + shapeText(w.sizes()) + " in blocks of " +
                                      std::to_string(block->first) + " x " + std::to_string(block->second));
        auto expanded = scale.to(torch::kFloat32)
                            .repeat_interleave(block->first, 0)
                            .narrow(0, 0, w.size(0))
                            .repeat_interleave(block->second, 1)
                            .narrow(1, 0, w.size(1));
        weight->second = w.to(torch::kFloat32) * expanded;
        it = found.erase(it);
    }
    for (const auto& [name, tensor] : found)
        if (tensor.scalar_type() == torch::kFloat8_e4m3fn)
            throw ConfigError("", file_of[name] + ": '" + name + "' is fp8 without a weight_scale_inv beside it");
    // Multi-token-prediction layers past the model's modules (model.n_mtp_depth set below
    // num_nextn_predict_layers) are left out.
    std::set<int64_t> dropped;
    for (auto it = found.begin(); it != found.end();) {
        const int64_t layer = layerOf(it->first);
        if (layer >= model.n_layers + model.n_mtp_depth) {
            dropped.insert(layer);
            it = found.erase(it);
        } else {
            ++it;
        }
    }
    if (!dropped.empty() && notes)
        notes->push_back(std::to_string(dropped.size()) + " multi-token-prediction layer(s) past model.n_mtp_depth (" +
                         std::to_string(model.n_mtp_depth) + ") not loaded");

    Transformer shapes(model);
    NamedTensors out;
    std::set<std::string> taken;
    auto take = [&](const std::string& hf_name, const std::string& ours, c10::IntArrayRef shape) -> torch::Tensor {
        auto it = found.find(hf_name);
        if (it == found.end())
            throw ConfigError("", dir + ": tensor '" + hf_name + "' (our '" + ours + "') is missing; the directory was "
                                        "written for another model");
        taken.insert(hf_name);
        if (it->second.sizes() != shape)
            throw ConfigError("", file_of[hf_name] + ": tensor '" + hf_name + "' has shape " + shapeText(it->second.sizes()) +
                                      " but the model needs " + shapeText(shape));
        return it->second;
    };
    for (const auto& [ours, destination] : stateDict(shapes)) {
        torch::Tensor value;
        const std::string published = mtpLayerName(ours, model.n_layers);
        auto expert = routedExpertTensor(published);
        const std::string fused = "model.layers." + std::to_string(expert ? expert->layer : 0) + ".mlp.experts.";
        if (expert && found.count(fused + "gate_up_proj")) {
            // transformers 5's layout: gate_up_proj [E, 2I, H] (gate rows first), down_proj [E, H, I].
            const int64_t E = model.n_routed_experts, I = model.moe_inter_dim, H = model.dim;
            if (expert->projection == "w2") {
                value = take(fused + "down_proj", ours, {E, H, I})[expert->expert];
            } else {
                auto both = take(fused + "gate_up_proj", ours, {E, 2 * I, H})[expert->expert];
                value = both.narrow(0, expert->projection == "w1" ? 0 : I, I);
            }
        } else {
            value = take(hfTensorName(published), ours, destination.sizes());
        }
        out.emplace_back(ours, value.to(destination.scalar_type()).contiguous().clone());
    }
    // A module's copies of the embedding and the head: the model shares the main ones; copies
    // that differ (a checkpoint fine-tuned apart) are named in a note.
    for (int64_t k = 0; k < model.n_mtp_depth; ++k)
        for (const auto& [copy, main] : {std::pair{hfModuleEmbeddingName(model.n_layers + k), std::string("model.embed_tokens.weight")},
                                         std::pair{hfModuleHeadName(model.n_layers + k), std::string("lm_head.weight")}}) {
            auto it = found.find(copy);
            if (it == found.end()) continue;
            taken.insert(copy);
            auto original = found.find(main);
            if (notes && original != found.end() && !torch::equal(it->second, original->second))
                notes->push_back("'" + copy + "' differs from '" + main + "'; the module shares '" + main + "'");
        }
    for (const auto& [name, tensor] : found)
        if (!taken.count(name))
            throw ConfigError("", file_of[name] + ": tensor '" + name + "' is not part of the model its config.json "
                                                  "describes here; the directory may be for another architecture");
    return out;
}

}  // namespace trainbench
