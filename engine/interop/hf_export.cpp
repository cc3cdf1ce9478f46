// `export-hf`: a checkpoint's weights as a directory transformers, vLLM and SGLang load.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "files/remove_tree.h"
#include "weights/hf_config.h"
#include "weights/hf_names.h"
#include "model/mtp_module.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "data/data_tokenizer.h"
#include "trainbench/config_io.h"
#include "trainbench/hf_interop.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

void writeJson(const fs::path& path, const nlohmann::json& value) {
    std::ofstream out(path);
    out << value.dump(2) << "\n";
    out.flush();
    if (!out) throw std::runtime_error(path.string() + ": writing failed");
}

// The router's weight and bias stay fp32 (transformers keeps them so, and the choice of
// experts is where bf16 rounding would change the model's behaviour).
bool keptInFp32(const std::string& ours) {
    return ours.find(".ffn.gate.") != std::string::npos;
}

}  // namespace

int64_t parseByteSize(const std::string& text, const std::string& option) {
    size_t end = 0;
    double value = 0;
    try {
        value = std::stod(text, &end);
    } catch (const std::exception&) {
        end = 0;
    }
    std::string unit = text.substr(end);
    for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const std::map<std::string, double> units = {{"", 1},       {"B", 1},         {"KB", 1e3},      {"MB", 1e6},
                                                 {"GB", 1e9},   {"TB", 1e12},     {"KIB", 1024.0},  {"MIB", 1048576.0},
                                                 {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
    auto it = units.find(unit);
    if (end == 0 || it == units.end() || !(value > 0))
        throw ConfigError(option, option + " '" + text + "' is not a size; write e.g. 5GB, 500MB or 2GiB");
    return static_cast<int64_t>(value * it->second);
}

HfExportSummary exportHuggingFace(const ModelConfig& model, const std::string& weights_path, const HfExportOptions& o) {
    HfWeightDtype dtype{};
    HfExpertLayout expert_layout{};
    try {
        dtype = parseChoice<HfWeightDtype>(o.dtype);
    } catch (const std::invalid_argument&) {
        throw ConfigError("--dtype", "--dtype '" + o.dtype + "' is not bf16 or fp32");
    }
    try {
        expert_layout = parseChoice<HfExpertLayout>(o.expert_layout);
    } catch (const std::invalid_argument&) {
        throw ConfigError("--expert-layout", "--expert-layout '" + o.expert_layout + "' is not per-expert or fused");
    }
    if (o.shard_bytes <= 0) throw ConfigError("--shard-size", "--shard-size must be positive");
    if (o.out_dir.empty()) throw ConfigError("--out", "--out names the directory to write");
    const fs::path out = fs::path(o.out_dir);
    std::error_code error;
    if (fs::exists(out, error))
        throw ConfigError("--out", out.string() + " exists; choose a new directory (nothing was written)");
    if (!o.tokenizer_path.empty() && !fs::is_regular_file(o.tokenizer_path, error))
        throw ConfigError("data.tokenizer", o.tokenizer_path + " is not a file; the run's tokenizer cannot be copied");
    // The run's tokenizer: its end token is the model's eos.
    std::unique_ptr<Tokenizer> tokenizer;
    int64_t eos = -1;
    std::string eos_text;
    if (!o.tokenizer_path.empty()) {
        tokenizer = openDataTokenizer(o.tokenizer_path);
        eos = tokenizer->endOfText();
        if (eos >= 0) eos_text = tokenizer->decode({static_cast<int32_t>(eos)});
    }
    HfExportSummary summary;
    summary.architecture = hfArchitectureFor(model);
    const bool v3 = summary.architecture == "DeepseekV3ForCausalLM";
    const std::string file = fs::is_directory(weights_path, error) ? weights_path + "/model.safetensors" : weights_path;
    NamedTensors weights = readSafetensors(file);
    std::map<std::string, torch::Tensor> by_name(weights.begin(), weights.end());
    // Checked against the config: every name and shape of its state dict, nothing else.
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& [name, tensor] : weights) shapes[name] = tensor.sizes().vec();
    const NamedTensors expected = stateDict(Transformer(model));
    requireSameTensors(expected, shapes, file);
    const auto storage = dtype == HfWeightDtype::Fp32 ? torch::kFloat32 : torch::kBFloat16;

    // In the state dict's order; a fused layer's two tensors once its last expert is read.
    NamedTensors hf;
    std::map<int64_t, std::vector<torch::Tensor>> gate_up, down;  // per layer, per expert
    std::set<int64_t> fused_written;
    auto stored = [&](const std::string& name) {
        return by_name.at(name).to(torch::kCPU).to(keptInFp32(name) ? torch::kFloat32 : storage).contiguous();
    };
    // A multi-token-prediction module's weights go under its published layer number, n_layers + k.
    auto published = [&](const std::string& name) { return mtpLayerName(name, model.n_layers); };
    for (const auto& [name, unused] : expected) {
        if (auto expert = routedExpertTensor(published(name)); expert && expert_layout == HfExpertLayout::Fused) {
            // gate_up_proj [E, 2I, H]: each expert's gate rows then its up rows; down_proj [E, H, I].
            if (expert->projection != "w1") continue;  // w2 and w3 are taken with w1
            const std::string prefix = name.substr(0, name.size() - std::string("w1.weight").size());
            gate_up[expert->layer].push_back(torch::cat({stored(name), stored(prefix + "w3.weight")}, 0));
            down[expert->layer].push_back(stored(prefix + "w2.weight"));
            if (static_cast<int64_t>(gate_up[expert->layer].size()) == model.n_routed_experts &&
                fused_written.insert(expert->layer).second) {
                const std::string layer = "model.layers." + std::to_string(expert->layer) + ".mlp.experts.";
                hf.emplace_back(layer + "gate_up_proj", torch::stack(gate_up[expert->layer]).contiguous());
                hf.emplace_back(layer + "down_proj", torch::stack(down[expert->layer]).contiguous());
                gate_up.erase(expert->layer);
                down.erase(expert->layer);
            }
            continue;
        }
        hf.emplace_back(hfTensorName(published(name)), stored(name));
        // DeepseekV3 always has the balancing bias; a router without one is the zero bias.
        if (v3 && !model.hasGateBias() && name.size() > 17 && name.compare(name.size() - 17, 17, ".ffn.gate.weight") == 0)
            hf.emplace_back(hfTensorName(published(name.substr(0, name.size() - 6) + "bias")),
                            torch::zeros({model.n_routed_experts}, torch::kFloat32));
    }
    // Each module's copies of the embedding and the head, as the published checkpoint stores
    // them (what vLLM's and SGLang's drafting modules load).
    for (int64_t k = 0; k < model.n_mtp_depth; ++k) {
        hf.emplace_back(hfModuleEmbeddingName(model.n_layers + k), stored("embed.weight"));
        hf.emplace_back(hfModuleHeadName(model.n_layers + k), stored("head.weight"));
    }

    // Shards of at most shard_bytes (a larger tensor alone in its own).
    std::vector<NamedTensors> shards(1);
    int64_t in_shard = 0;
    for (auto& item : hf) {
        const int64_t bytes = item.second.numel() * item.second.element_size();
        summary.bytes += bytes;
        if (in_shard > 0 && in_shard + bytes > o.shard_bytes) {
            shards.emplace_back();
            in_shard = 0;
        }
        shards.back().push_back(item);
        in_shard += bytes;
    }
    summary.tensors = static_cast<int64_t>(hf.size());
    summary.shards = static_cast<int64_t>(shards.size());

    const fs::path partial = out.string() + ".partial";
    removeTree(partial.string());
    fs::create_directories(partial);
    try {
        auto shardName = [&](size_t i) {
            if (shards.size() == 1) return std::string("model.safetensors");
            char text[64];
            std::snprintf(text, sizeof text, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
            return std::string(text);
        };
        nlohmann::json weight_map = nlohmann::json::object();
        for (size_t i = 0; i < shards.size(); ++i) {
            writeSafetensors((partial / shardName(i)).string(), shards[i], {{"format", "pt"}});
            for (const auto& [name, t] : shards[i]) weight_map[name] = shardName(i);
        }
        if (shards.size() > 1)
            writeJson(partial / "model.safetensors.index.json",
                      {{"metadata", {{"total_size", summary.bytes}}}, {"weight_map", weight_map}});
        writeJson(partial / "config.json", hfConfigJson(model, dtype == HfWeightDtype::Fp32, -1, eos));
        nlohmann::json generation = {{"_from_model_config", true}};
        if (eos >= 0) generation["eos_token_id"] = eos;
        writeJson(partial / "generation_config.json", generation);
        if (tokenizer) {
            // A tokenizer.json is what transformers' fast tokenizers read as is; a SentencePiece
            // model goes in as tokenizer.model.
            const bool sentencepiece = tokenizer->kind() == "SentencePiece";
            fs::copy_file(o.tokenizer_path, partial / (sentencepiece ? "tokenizer.model" : "tokenizer.json"));
            nlohmann::json t = {{"model_max_length", model.max_seq_len},
                                {"clean_up_tokenization_spaces", false},
                                {"add_bos_token", false},
                                {"add_eos_token", false},
                                {"bos_token", nullptr},
                                {"eos_token", eos >= 0 ? nlohmann::json(eos_text) : nlohmann::json(nullptr)}};
            t["tokenizer_class"] = sentencepiece ? "LlamaTokenizer" : "PreTrainedTokenizerFast";
            writeJson(partial / "tokenizer_config.json", t);
        }
        fs::rename(partial, out);
    } catch (...) {
        removeTree(partial.string());
        throw;
    }
    summary.dir = out.string();
    return summary;
}

}  // namespace trainbench
