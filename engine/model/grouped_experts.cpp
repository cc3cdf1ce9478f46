// Grouped experts: y = (silu(x W1_e^T) * x W3_e^T) W2_e^T per group e, and its backward.
#include "model/grouped_experts.h"

#include <ATen/autocast_mode.h>

namespace trainbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// at::_grouped_mm on the CPU takes fp32 and bf16 with 16-byte aligned rows.
bool groupable(torch::ScalarType dtype, int64_t dim, int64_t hidden) {
    if (dtype != torch::kFloat32 && dtype != torch::kBFloat16) return false;
    const int64_t bytes = c10::elementSize(dtype);
    return (dim * bytes) % 16 == 0 && (hidden * bytes) % 16 == 0;
}

// x [R, K] grouped by rows, w [L, K, N]: [R, N], group e times w[e].
torch::Tensor rowsTimes(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& offsets,
                        const std::vector<int64_t>& counts, bool grouped) {
    if (grouped) return at::_grouped_mm(x, w, offsets);
    std::vector<torch::Tensor> parts;
    int64_t start = 0;
    for (size_t e = 0; e < counts.size(); ++e) {
        parts.push_back(x.narrow(0, start, counts[e]).mm(w[e]));
        start += counts[e];
    }
    return torch::cat(parts, 0);
}

// a [M, R], b [R, N], both grouped along R: [L, M, N], group e's a_e b_e (zeros for an empty one).
torch::Tensor groupsOuter(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& offsets,
                          const std::vector<int64_t>& counts, bool grouped) {
    if (grouped) return at::_grouped_mm(a, b, offsets);
    std::vector<torch::Tensor> parts;
    int64_t start = 0;
    for (size_t e = 0; e < counts.size(); ++e) {
        parts.push_back(a.narrow(1, start, counts[e]).mm(b.narrow(0, start, counts[e])));
        start += counts[e];
    }
    return torch::stack(parts, 0);
}

// The weights stacked for one call: [L, 2I, d] (each expert's w1 rows, then its w3 rows) and
// [L, d, I] (w2).
torch::Tensor stackedGateUp(at::TensorList w, size_t L, torch::ScalarType dtype) {
    std::vector<torch::Tensor> parts;
    for (size_t e = 0; e < L; ++e) parts.push_back(torch::cat({w[3 * e], w[3 * e + 2]}, 0));
    return torch::stack(parts, 0).to(dtype);
}
torch::Tensor stackedDown(at::TensorList w, size_t L, torch::ScalarType dtype) {
    std::vector<torch::Tensor> parts;
    for (size_t e = 0; e < L; ++e) parts.push_back(w[3 * e + 1]);
    return torch::stack(parts, 0).to(dtype);
}

class GroupedExperts : public torch::autograd::Function<GroupedExperts> {
public:
    // weights: w1, w2, w3 of each expert in turn.
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& rows, at::TensorList weights,
                                 std::vector<int64_t> counts, int64_t dtype_code) {
        const auto dtype = static_cast<torch::ScalarType>(dtype_code);
        const size_t L = counts.size();
        const int64_t d = rows.size(1), I = weights[0].size(0);
        const bool grouped = groupable(dtype, d, I);
        std::vector<int32_t> ends;
        int64_t end = 0;
        for (int64_t c : counts) ends.push_back(static_cast<int32_t>(end += c));
        auto offsets = torch::tensor(ends, torch::kInt32).to(rows.device());
        auto x = rows.to(dtype).contiguous();                                                // [R, d]
        auto ab = rowsTimes(x, stackedGateUp(weights, L, dtype).transpose(1, 2), offsets, counts, grouped);  // [R, 2I]
        auto a = ab.narrow(1, 0, I), b = ab.narrow(1, I, I);
        auto h = (torch::silu(a) * b).contiguous();                                          // [R, I]
        auto y = rowsTimes(h, stackedDown(weights, L, dtype).transpose(1, 2), offsets, counts, grouped);  // [R, d]
        variable_list saved{x, ab, offsets};
        for (const auto& w : weights) saved.push_back(w);
        ctx->save_for_backward(saved);
        ctx->saved_data["counts"] = counts;
        ctx->saved_data["grouped"] = grouped;
        ctx->saved_data["rows_dtype"] = static_cast<int64_t>(rows.scalar_type());
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor x = saved[0], ab = saved[1], offsets = saved[2];
        const variable_list weights(saved.begin() + 3, saved.end());
        const auto counts = ctx->saved_data["counts"].toIntVector();
        const bool grouped = ctx->saved_data["grouped"].toBool();
        const size_t L = counts.size();
        const auto dtype = x.scalar_type();
        const int64_t I = weights[0].size(0);
        auto gy = grads[0].to(dtype).contiguous();                                   // [R, d]
        auto a = ab.narrow(1, 0, I), b = ab.narrow(1, I, I);
        auto s = torch::sigmoid(a);
        auto silu = a * s;
        auto h = (silu * b).contiguous();
        auto gh = rowsTimes(gy, stackedDown(weights, L, dtype), offsets, counts, grouped);  // [R, I]
        // d silu(a) / da = s (1 + a (1 - s))
        auto ga = gh * b * (s * (1 + a * (1 - s)));
        auto gb = gh * silu;
        auto gab = torch::cat({ga, gb}, 1);                                          // [R, 2I]
        auto gx = rowsTimes(gab, stackedGateUp(weights, L, dtype), offsets, counts, grouped);  // [R, d]
        auto g_gate_up = groupsOuter(gab.t(), x, offsets, counts, grouped);        // [L, 2I, d]
        auto g_down = groupsOuter(gy.t(), h, offsets, counts, grouped);             // [L, d, I]
        variable_list out{gx.to(static_cast<torch::ScalarType>(ctx->saved_data["rows_dtype"].toInt()))};
        for (size_t e = 0; e < L; ++e) {
            const auto master = weights[3 * e].scalar_type();
            out.push_back(g_gate_up[e].narrow(0, 0, I).to(master));
            out.push_back(g_down[e].to(master));
            out.push_back(g_gate_up[e].narrow(0, I, I).to(master));
        }
        out.push_back(torch::Tensor());  // counts
        out.push_back(torch::Tensor());  // dtype
        return out;
    }
};

}  // namespace

torch::Tensor groupedExperts(const torch::Tensor& rows, const std::vector<MLP>& experts,
                             const std::vector<int64_t>& rows_per_expert) {
    variable_list weights;
    for (const MLP& e : experts) {
        weights.push_back(e->gateWeight());
        weights.push_back(e->downWeight());
        weights.push_back(e->upWeight());
    }
    // Under autocast the products run in its dtype, as the experts' linear layers' would.
    const auto device = rows.device().type();
    const auto dtype = at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device)
                                                                 : weights.front().scalar_type();
    // As a TensorList, so that autograd takes each weight as an input of the node.
    return GroupedExperts::apply(rows, at::TensorList(weights), rows_per_expert, static_cast<int64_t>(dtype));
}

}  // namespace trainbench
