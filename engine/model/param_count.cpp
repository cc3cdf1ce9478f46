// Parameter counts from the config alone (docs/design/model.md section 3), with exact integers.
#include "trainbench/param_count.h"

namespace trainbench {

ParamCount countParameters(const ModelConfig& c) {
    const int64_t d = c.dim, h = c.n_heads, qk = c.qkHeadDim();
    const int64_t attention =
        (c.q_lora_rank == 0 ? d * h * qk : d * c.q_lora_rank + c.q_lora_rank + c.q_lora_rank * h * qk) +
        d * (c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank +
        c.kv_lora_rank * h * (c.qk_nope_head_dim + c.v_head_dim) + h * c.v_head_dim * d;
    const int64_t expert = 3 * d * c.moe_inter_dim;
    const int64_t gate = c.n_routed_experts * d + (c.hasGateBias() ? c.n_routed_experts : 0);
    const int64_t dense_layers = c.n_dense_layers, moe_layers = c.n_layers - c.n_dense_layers;
    const int64_t shared = c.n_shared_experts;

    const int64_t common = 2 * c.vocab_size * d + d + c.n_layers * (attention + 2 * d) +
                           dense_layers * 3 * d * c.inter_dim;
    ParamCount count;
    count.total = common + moe_layers * (gate + (c.n_routed_experts + shared) * expert);
    count.activated = common + moe_layers * (gate + (c.n_activated_experts + shared) * expert);

    const int64_t attention_tensors = (c.q_lora_rank == 0 ? 1 : 3) + 4;  // + wkv_a, kv_norm, wkv_b, wo
    const int64_t moe_tensors = 1 + (c.hasGateBias() ? 1 : 0) + 3 * c.n_routed_experts + (shared > 0 ? 3 : 0);
    count.dense_block = attention + 2 * d + 3 * d * c.inter_dim;
    count.moe_block = attention + 2 * d + gate + (c.n_routed_experts + shared) * expert;
    count.attention = attention;
    count.embedding = c.vocab_size * d;
    count.head = c.vocab_size * d;
    count.routed_experts = moe_layers * c.n_routed_experts * expert;
    count.state_dict_tensors = 3 + c.n_layers * (2 + attention_tensors) + dense_layers * 3 + moe_layers * moe_tensors;

    // Each module: a block of the model's kind (dense only when every layer is), eh_proj, enorm,
    // hnorm and its final norm.
    const bool dense_module = c.n_dense_layers >= c.n_layers;
    const int64_t join = 2 * d * d + 3 * d;
    const int64_t D = c.n_mtp_depth;
    count.mtp = D * (join + (dense_module ? count.dense_block : count.moe_block));
    count.mtp_activated =
        D * (join + (dense_module ? count.dense_block
                                  : attention + 2 * d + gate + (c.n_activated_experts + shared) * expert));
    count.total += count.mtp;
    if (!dense_module) count.routed_experts += D * c.n_routed_experts * expert;
    count.activated += count.mtp_activated;
    count.state_dict_tensors += D * (4 + 2 + attention_tensors + (dense_module ? 3 : moe_tensors));
    return count;
}

}  // namespace trainbench
