// Tensor names: the reference's (DeepSeek model.py, our state dict) and Hugging Face's.
#pragma once

#include <optional>
#include <string>

namespace trainbench {

// The transformers name of a reference state-dict name ("layers.3.attn.wkv_a.weight" ->
// "model.layers.3.self_attn.kv_a_proj_with_mqa.weight"; the gate's bias is
// "mlp.gate.e_score_correction_bias"). Experts keep the per-expert form. A multi-token-
// prediction module's names go through mtpLayerName first (model/mtp_module.h): "layers.61.enorm.
// weight" stays under its layer, the module's norm is "shared_head.norm". Throws
// std::logic_error for a name the model does not produce.
std::string hfTensorName(const std::string& ours);

// The routed expert a reference name belongs to: its layer, expert and projection (w1 gate,
// w2 down, w3 up); nothing for any other tensor.
struct ExpertTensor {
    int64_t layer = 0, expert = 0;
    std::string projection;  // "w1" | "w2" | "w3"
};
std::optional<ExpertTensor> routedExpertTensor(const std::string& ours);

// The published checkpoint's copies of the embedding and the head in multi-token-prediction
// module `layer` (its published layer number): the inference engines that draft with the module
// read them there.
std::string hfModuleEmbeddingName(int64_t layer);
std::string hfModuleHeadName(int64_t layer);

}  // namespace trainbench
