// The model section and transformers' DeepseekV2/V3 config, field by field, both ways.
#include "weights/hf_config.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "trainbench/config_io.h"
#include "trainbench/hf_directory.h"

namespace trainbench {
namespace {

constexpr double kNormEpsilon = 1e-6;  // engine/model/rms_norm.h

bool isSigmoid(const ModelConfig& m) { return scoreFunction(m) == ScoreFunction::Sigmoid; }

}  // namespace

std::string hfArchitectureFor(const ModelConfig& m) {
    if (isSigmoid(m)) {
        // DeepseekV3's router always scores a group by its two best experts plus the bias (the
        // reference does so only with the bias; without it, by the best one).
        if (!m.hasGateBias() && m.n_expert_groups > 1)
            throw ConfigError("model.gate_bias", "false with n_expert_groups " + std::to_string(m.n_expert_groups) +
                                                     " has no transformers equivalent (DeepseekV3 scores a group by its "
                                                     "two best experts and the balancing bias); set model.gate_bias to "
                                                     "true or n_expert_groups to 1 to export");
        return "DeepseekV3ForCausalLM";
    }
    if (m.hasGateBias())
        throw ConfigError("model.gate_bias", "true with score_func softmax has no transformers equivalent (DeepseekV2 has "
                                             "no balancing bias); set model.gate_bias to false or score_func to sigmoid");
    return "DeepseekV2ForCausalLM";
}

nlohmann::json hfConfigJson(const ModelConfig& m, bool fp32_storage, int64_t bos, int64_t eos) {
    const std::string architecture = hfArchitectureFor(m);
    const bool v3 = architecture == "DeepseekV3ForCausalLM";
    nlohmann::json c;
    c["architectures"] = {architecture};
    c["model_type"] = v3 ? "deepseek_v3" : "deepseek_v2";
    c["vocab_size"] = m.vocab_size;
    c["hidden_size"] = m.dim;
    c["intermediate_size"] = m.inter_dim;
    c["moe_intermediate_size"] = m.moe_inter_dim;
    c["num_hidden_layers"] = m.n_layers;
    c["first_k_dense_replace"] = m.n_dense_layers;
    c["num_attention_heads"] = m.n_heads;
    c["num_key_value_heads"] = m.n_heads;  // MLA: every head has its own keys and values
    c["n_routed_experts"] = m.n_routed_experts;
    c["n_shared_experts"] = m.n_shared_experts;
    c["num_experts_per_tok"] = m.n_activated_experts;
    c["n_group"] = m.n_expert_groups;
    c["topk_group"] = m.n_limited_groups;
    c["routed_scaling_factor"] = m.route_scale;
    // The reference renormalises the chosen sigmoid scores and leaves softmax ones as they are.
    c["norm_topk_prob"] = v3;
    if (v3) {
        c["topk_method"] = "noaux_tc";
        c["scoring_func"] = "sigmoid";
        c["rope_interleave"] = true;     // the reference rotates interleaved pairs
        c["num_nextn_predict_layers"] = m.n_mtp_depth;
    } else {
        c["topk_method"] = m.n_expert_groups > 1 ? "group_limited_greedy" : "greedy";
        c["scoring_func"] = "softmax";
        // DeepseekV2's config has no such key; its inference engines read it where present.
        if (m.n_mtp_depth > 0) c["num_nextn_predict_layers"] = m.n_mtp_depth;
    }
    c["q_lora_rank"] = m.q_lora_rank > 0 ? nlohmann::json(m.q_lora_rank) : nlohmann::json(nullptr);
    c["kv_lora_rank"] = m.kv_lora_rank;
    c["qk_nope_head_dim"] = m.qk_nope_head_dim;
    c["qk_rope_head_dim"] = m.qk_rope_head_dim;
    c["v_head_dim"] = m.v_head_dim;
    c["max_position_embeddings"] = m.max_seq_len;
    c["rms_norm_eps"] = kNormEpsilon;
    c["hidden_act"] = "silu";
    c["attention_bias"] = false;
    c["attention_dropout"] = 0.0;
    c["tie_word_embeddings"] = false;
    c["initializer_range"] = m.init_std;
    c["use_cache"] = true;
    c["bos_token_id"] = bos >= 0 ? nlohmann::json(bos) : nlohmann::json(nullptr);
    c["eos_token_id"] = eos >= 0 ? nlohmann::json(eos) : nlohmann::json(nullptr);
    c["pad_token_id"] = nullptr;
    const std::string torch_dtype = fp32_storage ? "float32" : "bfloat16";
    c["dtype"] = torch_dtype;
    c["torch_dtype"] = torch_dtype;
    // YaRN as the reference applies it: the softmax scale multiplied by mscale^2, cos and sin
    // left alone, which transformers does when mscale equals mscale_all_dim.
    nlohmann::json parameters = {{"rope_type", "default"}, {"rope_theta", m.rope_theta}};
    c["rope_theta"] = m.rope_theta;
    c["rope_scaling"] = nullptr;
    if (m.yarnActive()) {
        nlohmann::json yarn = {{"type", "yarn"},
                               {"rope_type", "yarn"},
                               {"factor", m.rope_factor},
                               {"original_max_position_embeddings", m.original_seq_len},
                               {"beta_fast", m.beta_fast},
                               {"beta_slow", m.beta_slow},
                               {"mscale", m.mscale},
                               {"mscale_all_dim", m.mscale}};
        c["rope_scaling"] = yarn;
        parameters = yarn;
        parameters.erase("type");
        parameters["rope_theta"] = m.rope_theta;
    }
    c["rope_parameters"] = parameters;
    return c;
}

bool isHuggingFaceDirectory(const std::string& path) {
    std::error_code error;
    return std::filesystem::is_directory(path, error) && std::filesystem::is_regular_file(path + "/config.json", error);
}

ModelConfig readHuggingFaceConfig(const std::string& dir, std::vector<std::string>* notes) {
    const std::string path = dir + "/config.json";
    std::ifstream in(path);
    if (!in) throw ConfigError("", path + ": cannot be read; a Hugging Face model directory holds a config.json");
    nlohmann::json c = nlohmann::json::parse(in, nullptr, false);
    if (c.is_discarded() || !c.is_object()) throw ConfigError("", path + ": not a JSON object");
    auto refuse = [&](const std::string& key, const std::string& why) {
        throw ConfigError("", path + ": " + key + " " + (c.contains(key) ? c[key].dump() : std::string("(missing)")) +
                                  ": " + why);
    };
    const std::string type = c.value("model_type", std::string());
    if (type != "deepseek_v3" && type != "deepseek_v2")
        refuse("model_type", "only DeepSeek-V2/V3 models (deepseek_v2, deepseek_v3) are modelled here");
    const bool v3 = type == "deepseek_v3";
    std::set<std::string> used;
    auto integer = [&](const std::string& key, std::optional<int64_t> fallback = std::nullopt) -> int64_t {
        used.insert(key);
        if (!c.contains(key) || c[key].is_null()) {
            if (fallback) return *fallback;
            refuse(key, "is required");
        }
        if (!c[key].is_number_integer()) refuse(key, "must be an integer");
        return c[key].get<int64_t>();
    };
    auto number = [&](const std::string& key, double fallback) -> double {
        used.insert(key);
        if (!c.contains(key) || c[key].is_null()) return fallback;
        if (!c[key].is_number()) refuse(key, "must be a number");
        return c[key].get<double>();
    };
    // Keys that must hold the one value this engine computes with.
    auto require = [&](const std::string& key, const nlohmann::json& expected, const std::string& why) {
        used.insert(key);
        if (c.contains(key) && !c[key].is_null() && c[key] != expected) refuse(key, why);
    };
    ModelConfig m;
    m.vocab_size = integer("vocab_size");
    m.dim = integer("hidden_size");
    m.inter_dim = integer("intermediate_size");
    m.moe_inter_dim = integer("moe_intermediate_size");
    m.n_layers = integer("num_hidden_layers");
    m.n_dense_layers = integer("first_k_dense_replace", 0);
    m.n_heads = integer("num_attention_heads");
    m.n_routed_experts = integer("n_routed_experts");
    m.n_shared_experts = integer("n_shared_experts", 0);
    m.n_activated_experts = integer("num_experts_per_tok");
    m.n_expert_groups = integer("n_group", 1);
    m.n_limited_groups = integer("topk_group", 1);
    m.route_scale = number("routed_scaling_factor", 1.0);
    m.q_lora_rank = integer("q_lora_rank", 0);
    m.kv_lora_rank = integer("kv_lora_rank");
    m.qk_nope_head_dim = integer("qk_nope_head_dim");
    m.qk_rope_head_dim = integer("qk_rope_head_dim");
    m.v_head_dim = integer("v_head_dim");
    m.max_seq_len = integer("max_position_embeddings");
    m.init_std = number("initializer_range", m.init_std);
    m.score_func = v3 ? "sigmoid" : "softmax";
    // V3's router always has its balancing bias (e_score_correction_bias); V2's never.
    m.gate_bias = v3;
    require("scoring_func", m.score_func, std::string("must be ") + m.score_func + " for " + type);
    require("norm_topk_prob", v3, v3 ? "must be true: the reference renormalises the chosen sigmoid scores"
                                     : "must be false: the reference does not renormalise softmax scores");
    if (v3) require("topk_method", "noaux_tc", "must be noaux_tc (the bias-corrected group top-k)");
    else if (c.contains("topk_method") && !c["topk_method"].is_null()) {
        used.insert("topk_method");
        const std::string method = c["topk_method"].is_string() ? c["topk_method"].get<std::string>() : "";
        if (method != "greedy" && method != "group_limited_greedy")
            refuse("topk_method", "must be greedy or group_limited_greedy for deepseek_v2");
        if (method == "greedy") m.n_expert_groups = 1, m.n_limited_groups = 1;
    }
    require("hidden_act", "silu", "must be silu (SwiGLU experts)");
    require("attention_bias", false, "must be false: the projections have no bias");
    require("mlp_bias", false, "must be false: the projections have no bias");
    require("tie_word_embeddings", false, "must be false: the head is its own matrix");
    require("rope_interleave", true, "must be true: the reference rotates interleaved pairs");
    require("moe_layer_freq", 1, "must be 1: every layer after the dense ones is an MoE layer");
    used.insert("rms_norm_eps");
    if (c.contains("rms_norm_eps") && (!c["rms_norm_eps"].is_number() ||
                                        std::fabs(c["rms_norm_eps"].get<double>() - kNormEpsilon) > 1e-12))
        refuse("rms_norm_eps", "must be 1e-06 (the norms' epsilon here)");
    used.insert("attention_dropout");
    if (c.contains("attention_dropout") && c["attention_dropout"].is_number() && c["attention_dropout"].get<double>() != 0.0)
        refuse("attention_dropout", "must be 0: training here has no dropout");
    // The rotary embedding: transformers 5's rope_parameters, or 4's rope_theta and rope_scaling.
    used.insert("rope_parameters");
    used.insert("rope_theta");
    used.insert("rope_scaling");
    nlohmann::json rope = c.contains("rope_parameters") && c["rope_parameters"].is_object() ? c["rope_parameters"]
                                                                                           : nlohmann::json::object();
    if (c.contains("rope_scaling") && c["rope_scaling"].is_object())
        for (auto& [k, v] : c["rope_scaling"].items()) rope[k] = v;
    if (!rope.contains("rope_theta")) rope["rope_theta"] = c.value("rope_theta", 10000.0);
    m.rope_theta = rope["rope_theta"].get<double>();
    const std::string rope_type = rope.value("rope_type", rope.value("type", std::string("default")));
    if (rope_type == "yarn") {
        m.rope_factor = rope.value("factor", m.rope_factor);
        m.original_seq_len = rope.value("original_max_position_embeddings", m.original_seq_len);
        m.beta_fast = rope.value("beta_fast", m.beta_fast);
        m.beta_slow = rope.value("beta_slow", m.beta_slow);
        m.mscale = rope.value("mscale", m.mscale);
        if (std::fabs(rope.value("mscale_all_dim", m.mscale) - m.mscale) > 1e-12)
            refuse("rope_scaling", "mscale and mscale_all_dim must be equal (the reference scales the softmax by "
                                   "mscale^2 and leaves cos and sin alone)");
        if (m.max_seq_len <= m.original_seq_len)
            refuse("max_position_embeddings", "must exceed original_max_position_embeddings for YaRN to apply");
    } else if (rope_type == "default") {
        // No YaRN: the reference switches it on only beyond original_seq_len.
        m.original_seq_len = std::max(m.original_seq_len, m.max_seq_len);
    } else {
        refuse("rope_scaling", "rope type " + rope_type + " is not modelled (default or yarn)");
    }
    // The multi-token-prediction modules (DeepSeek-V3's one), trained and exported as published.
    m.n_mtp_depth = integer("num_nextn_predict_layers", 0);
    if (m.n_mtp_depth < 0) refuse("num_nextn_predict_layers", "must be >= 0");
    // What does not change the model: ids, cache and parallel settings, bookkeeping.
    for (const char* key : {"architectures", "model_type", "transformers_version", "dtype", "torch_dtype", "bos_token_id",
                            "eos_token_id", "pad_token_id", "use_cache", "pretraining_tp", "output_router_logits",
                            "auto_map", "ep_size", "seq_aux", "aux_loss_alpha", "num_key_value_heads", "head_dim",
                            "qk_head_dim", "_name_or_path", "quantization_config", "return_dict", "output_attentions",
                            "output_hidden_states", "id2label", "label2id", "problem_type", "chunk_size_feed_forward",
                            "is_encoder_decoder", "tokenizer_class", "sliding_window"})
        used.insert(key);
    for (const auto& [key, value] : c.items())
        if (!used.count(key))
            throw ConfigError("", path + ": " + key + " is not modelled here; remove it if it does not change the model");
    return m;
}

}  // namespace trainbench
