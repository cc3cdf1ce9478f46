// The sizes of the units ZeRO stage 3 gathers whole.
#include "plan/unit_elements.h"

#include <algorithm>

namespace trainbench::units {

int64_t routedPerLayer(const ModelConfig& c) { return c.n_routed_experts * 3 * c.dim * c.moe_inter_dim; }

// The modules' routed experts beyond this rank's share, and their gates' biases (buffers), are
// not in the unit.
int64_t headUnitElements(const ModelConfig& c, const ParamCount& counts, int64_t expert_parallel) {
    int64_t modules = counts.mtp;
    if (c.n_mtp_depth > 0 && c.n_dense_layers < c.n_layers)
        modules -= c.n_mtp_depth * ((c.hasGateBias() ? c.n_routed_experts : 0) + routedPerLayer(c) -
                                    routedPerLayer(c) / expert_parallel);
    return counts.head + c.dim + modules;
}

int64_t largestUnitElements(const ModelConfig& c, const ParamCount& counts, int64_t expert_parallel) {
    int64_t most = std::max(counts.embedding, headUnitElements(c, counts, expert_parallel));
    if (c.n_dense_layers > 0) most = std::max(most, counts.dense_block);
    if (const int64_t moe_layers = c.n_layers - c.n_dense_layers; moe_layers > 0) {
        const int64_t routed = routedPerLayer(c);
        // the gate's bias is a buffer, not a parameter
        most = std::max(most, counts.moe_block - (c.hasGateBias() ? c.n_routed_experts : 0) - routed +
                                  routed / expert_parallel);
    }
    return most;
}

int64_t largestAdjacentUnitsElements(const ModelConfig& c, const ParamCount& counts, int64_t expert_parallel) {
    int64_t moe_block = 0;
    if (const int64_t moe_layers = c.n_layers - c.n_dense_layers; moe_layers > 0) {
        const int64_t routed = routedPerLayer(c);
        moe_block = counts.moe_block - (c.hasGateBias() ? c.n_routed_experts : 0) - routed + routed / expert_parallel;
    }
    int64_t most = 0, after = headUnitElements(c, counts, expert_parallel);  // the unit whose backward runs before
    for (int64_t layer = c.n_layers; layer-- > 0;) {
        const int64_t block = layer < c.n_dense_layers ? counts.dense_block : moe_block;
        most = std::max(most, after + block);
        after = block;
    }
    return std::max(most, after + counts.embedding);
}

}  // namespace trainbench::units
