// Reference names to transformers names: a table of the parts below `layers.L.`.
#include "weights/hf_names.h"

#include <stdexcept>
#include <utility>

namespace trainbench {
namespace {

// The reference's module paths inside a block and transformers' for the same weights
// (DeepseekV2/V3 DecoderLayer: self_attn, mlp, the two norms).
constexpr std::pair<const char*, const char*> kBlockParts[] = {
    {"attn_norm.", "input_layernorm."},
    {"ffn_norm.", "post_attention_layernorm."},
    {"attn.wq_a.", "self_attn.q_a_proj."},
    {"attn.q_norm.", "self_attn.q_a_layernorm."},
    {"attn.wq_b.", "self_attn.q_b_proj."},
    {"attn.wq.", "self_attn.q_proj."},
    {"attn.wkv_a.", "self_attn.kv_a_proj_with_mqa."},
    {"attn.kv_norm.", "self_attn.kv_a_layernorm."},
    {"attn.wkv_b.", "self_attn.kv_b_proj."},
    {"attn.wo.", "self_attn.o_proj."},
    {"ffn.gate.bias", "mlp.gate.e_score_correction_bias"},
    {"ffn.gate.", "mlp.gate."},
};

// w1, w2, w3 of a SwiGLU (dense MLP, shared or routed expert): gate, down, up.
const char* projectionName(const std::string& w) {
    if (w == "w1") return "gate_proj";
    if (w == "w2") return "down_proj";
    if (w == "w3") return "up_proj";
    return nullptr;
}

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

[[noreturn]] void unknown(const std::string& name) {
    throw std::logic_error("no Hugging Face name for the tensor '" + name + "'");
}

// "ffn.[experts.E.|shared_experts.]wK.weight" -> "mlp.[experts.E.|shared_experts.]<proj>.weight"
std::string feedForwardName(const std::string& rest, const std::string& full) {
    std::string path = rest.substr(4);  // after "ffn."
    std::string middle;
    if (startsWith(path, "experts.")) {
        const size_t dot = path.find('.', 8);
        if (dot == std::string::npos) unknown(full);
        middle = path.substr(0, dot + 1);
        path = path.substr(dot + 1);
    } else if (startsWith(path, "shared_experts.")) {
        middle = "shared_experts.";
        path = path.substr(middle.size());
    }
    const size_t dot = path.find('.');
    const char* projection = dot == std::string::npos ? nullptr : projectionName(path.substr(0, dot));
    if (!projection) unknown(full);
    return "mlp." + middle + projection + path.substr(dot);
}

}  // namespace

std::string hfTensorName(const std::string& ours) {
    if (ours == "embed.weight") return "model.embed_tokens.weight";
    if (ours == "norm.weight") return "model.norm.weight";
    if (ours == "head.weight") return "lm_head.weight";
    if (!startsWith(ours, "layers.")) unknown(ours);
    const size_t dot = ours.find('.', 7);
    if (dot == std::string::npos) unknown(ours);
    const std::string layer = ours.substr(0, dot + 1), rest = ours.substr(dot + 1);
    // A multi-token-prediction module's own weights (under its published layer number).
    for (const char* own : {"enorm.", "hnorm.", "eh_proj."})
        if (startsWith(rest, own)) return "model." + layer + rest;
    if (startsWith(rest, "norm.")) return "model." + layer + "shared_head." + rest;
    for (const auto& [from, to] : kBlockParts)
        if (startsWith(rest, from)) return "model." + layer + to + rest.substr(std::string(from).size());
    if (startsWith(rest, "ffn.")) return "model." + layer + feedForwardName(rest, ours);
    unknown(ours);
}

std::optional<ExpertTensor> routedExpertTensor(const std::string& ours) {
    // layers.L.ffn.experts.E.wK.weight
    if (!startsWith(ours, "layers.")) return std::nullopt;
    const size_t layer_end = ours.find('.', 7);
    if (layer_end == std::string::npos || ours.compare(layer_end, 13, ".ffn.experts.") != 0) return std::nullopt;
    const size_t expert_begin = layer_end + 13, expert_end = ours.find('.', expert_begin);
    if (expert_end == std::string::npos) return std::nullopt;
    ExpertTensor t;
    t.layer = std::stoll(ours.substr(7, layer_end - 7));
    t.expert = std::stoll(ours.substr(expert_begin, expert_end - expert_begin));
    t.projection = ours.substr(expert_end + 1, 2);
    return t;
}

std::string hfModuleEmbeddingName(int64_t layer) {
    return "model.layers." + std::to_string(layer) + ".embed_tokens.weight";
}

std::string hfModuleHeadName(int64_t layer) {
    return "model.layers." + std::to_string(layer) + ".shared_head.head.weight";
}

}  // namespace trainbench
