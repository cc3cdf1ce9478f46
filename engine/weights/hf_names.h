// Tensor names: the reference's (DeepSeek model.py, our state dict) and Hugging Face's.
#pragma once

#include <optional>
#include <string>

namespace trainbench {

// The transformers name of a reference state-dict name ("layers.3.attn.wkv_a.weight" ->
// "model.layers.3.self_attn.kv_a_proj_with_mqa.weight"; the gate's bias is
// "mlp.gate.e_score_correction_bias"). Experts keep the per-expert form. Throws
// std::logic_error for a name the model does not produce.
std::string hfTensorName(const std::string& ours);

// The routed expert a reference name belongs to: its layer, expert and projection (w1 gate,
// w2 down, w3 up); nothing for any other tensor.
struct ExpertTensor {
    int64_t layer = 0, expert = 0;
    std::string projection;  // "w1" | "w2" | "w3"
};
std::optional<ExpertTensor> routedExpertTensor(const std::string& ours);

}  // namespace trainbench
