// Grouped experts: y = (silu(x W1_e^T) * x W3_e^T) W2_e^T per group e, and its backward.
#include "model/grouped_experts.h"

#include <ATen/autocast_mode.h>
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

#include "kernels/fp8_gated_mlp.h"
#include "kernels/gated_mlp.h"
#include "kernels/product_precision.h"
#include "memory/host_to_device.h"

namespace trainbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// at::_grouped_mm on the CPU takes fp32 and bf16 with 16-byte aligned rows. The weights are
// stacked for each call, a copy of all of them: only where that copy is no larger than the
// rows themselves or than kStackedBytes (small experts, or many tokens), so that a large
// model's experts (config_16B: 64 x 3 x 2048 x 1408 per layer, 2.2 GB) are not copied per
// micro-batch.
constexpr int64_t kStackedBytes = 8 << 20;
}  // namespace

bool expertsGroupable(torch::ScalarType dtype, int64_t rows, int64_t dim, int64_t hidden, size_t experts,
                      bool one_grouped_kernel) {
    if (dtype != torch::kFloat32 && dtype != torch::kBFloat16) return false;
    const int64_t bytes = c10::elementSize(dtype);
    if ((dim * bytes) % 16 != 0 || (hidden * bytes) % 16 != 0) return false;
    // On a GPU the alternative is three launches per expert and a gradient's worth more in the
    // backward (medium's 32 experts: thousands of small kernels per micro-batch); stacking the
    // weights is one device copy at the GPU's bandwidth.
    if (one_grouped_kernel && dtype == torch::kBFloat16) return true;
    const int64_t stacked = int64_t(experts) * 3 * dim * hidden;
    return stacked <= rows * dim || stacked * bytes <= kStackedBytes;
}

bool groupedKernelOn(const torch::Device& device) {
    if (!device.is_cuda()) return false;
    // at::_grouped_mm's CUTLASS kernel serves compute capability 9.x and 10.x; elsewhere it
    // loops over the groups after copying the offsets to the host.
    static std::mutex mutex;
    static std::map<int, bool> known;
    std::lock_guard lock(mutex);
    const int index = device.has_index() ? device.index() : 0;
    if (auto found = known.find(index); found != known.end()) return found->second;
    int major = 0;
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) == cudaSuccess;
    return known[index] = ok && (major == 9 || major == 10);
}

// The weights stacked for one call: [L, 2I, d] (each expert's w1 rows, then its w3 rows) and
// [L, d, I] (w2).
namespace {

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
        const bool grouped = expertsGroupable(dtype, rows.size(0), d, I, L, groupedKernelOn(rows.device()));
        auto x = rows.to(dtype).contiguous();  // [R, d]
        torch::Tensor offsets, ab, y;          // ab [R, 2I]: the two first projections
        if (grouped) {
            std::vector<int32_t> ends;
            int64_t end = 0;
            for (int64_t c : counts) ends.push_back(static_cast<int32_t>(end += c));
            offsets = copyToDevice(torch::tensor(ends, torch::kInt32), rows.device());
            ab = at::_grouped_mm(x, stackedGateUp(weights, L, dtype).transpose(1, 2), offsets);
            auto h = (torch::silu(ab.narrow(1, 0, I)) * ab.narrow(1, I, I)).contiguous();  // [R, I]
            y = at::_grouped_mm(h, stackedDown(weights, L, dtype).transpose(1, 2), offsets);
        } else {
            std::vector<torch::Tensor> ab_parts, y_parts;
            int64_t start = 0;
            for (size_t e = 0; e < L; ++e) {
                auto xe = x.narrow(0, start, counts[e]);
                auto a = xe.mm(weights[3 * e].to(dtype).t()), b = xe.mm(weights[3 * e + 2].to(dtype).t());
                ab_parts.push_back(torch::cat({a, b}, 1));
                y_parts.push_back((torch::silu(a) * b).mm(weights[3 * e + 1].to(dtype).t()));
                start += counts[e];
            }
            ab = torch::cat(ab_parts, 0);
            y = torch::cat(y_parts, 0);
        }
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
        auto gy = grads[0].to(dtype).contiguous();  // [R, d]
        auto a = ab.narrow(1, 0, I), b = ab.narrow(1, I, I);
        auto s = torch::sigmoid(a);
        auto silu = a * s;
        auto h = (silu * b).contiguous();  // [R, I]
        // d silu(a) / da = s (1 + a (1 - s)); the chain through h = silu(a) b.
        auto dsilu = s * (1 + a * (1 - s));
        std::vector<torch::Tensor> gate, down, up;  // per expert
        torch::Tensor gx;
        if (grouped) {
            auto gh = at::_grouped_mm(gy, stackedDown(weights, L, dtype), offsets);   // [R, I]
            auto gab = torch::cat({gh * b * dsilu, gh * silu}, 1);                    // [R, 2I]
            gx = at::_grouped_mm(gab, stackedGateUp(weights, L, dtype), offsets);      // [R, d]
            auto g_gate_up = at::_grouped_mm(gab.t(), x, offsets);                    // [L, 2I, d]
            auto g_down = at::_grouped_mm(gy.t(), h, offsets);                        // [L, d, I]
            for (size_t e = 0; e < L; ++e) {
                gate.push_back(g_gate_up[e].narrow(0, 0, I));
                down.push_back(g_down[e]);
                up.push_back(g_gate_up[e].narrow(0, I, I));
            }
        } else {
            std::vector<torch::Tensor> gx_parts;
            int64_t start = 0;
            for (size_t e = 0; e < L; ++e) {
                const int64_t c = counts[e];
                auto xe = x.narrow(0, start, c), gye = gy.narrow(0, start, c), he = h.narrow(0, start, c);
                auto gh = gye.mm(weights[3 * e + 1].to(dtype));
                auto ga = gh * b.narrow(0, start, c) * dsilu.narrow(0, start, c), gb = gh * silu.narrow(0, start, c);
                gx_parts.push_back(ga.mm(weights[3 * e].to(dtype)) + gb.mm(weights[3 * e + 2].to(dtype)));
                gate.push_back(ga.t().mm(xe));
                down.push_back(gye.t().mm(he));
                up.push_back(gb.t().mm(xe));
                start += c;
            }
            gx = torch::cat(gx_parts, 0);
        }
        variable_list out{gx.to(static_cast<torch::ScalarType>(ctx->saved_data["rows_dtype"].toInt()))};
        for (size_t e = 0; e < L; ++e) {
            const auto master = weights[3 * e].scalar_type();
            out.push_back(gate[e].to(master));
            out.push_back(down[e].to(master));
            out.push_back(up[e].to(master));
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
    // runtime.dtype fp8: on the CPU one node for every expert; elsewhere each expert's rows
    // through its own fp8 projections (the recipe quantises per expert).
    if (kernels::productPrecision() == kernels::ProductPrecision::kFp8) {
        if (kernels::fp8GatedMlpTakes(rows, weights)) return kernels::fp8GatedMlp(rows, weights, rows_per_expert);
        std::vector<torch::Tensor> outputs;
        int64_t start = 0;
        for (size_t e = 0; e < experts.size(); ++e) {
            MLP expert = experts[e];  // a handle: forward is not const
            outputs.push_back(expert->forward(rows.narrow(0, start, rows_per_expert[e])));
            start += rows_per_expert[e];
        }
        return torch::cat(outputs, 0);
    }
    // On the CPU in fp32 or fp64: one node of BLAS products on the weights in place, no stacking.
    if (kernels::gatedMlpTakes(rows, weights)) return kernels::gatedMlp(rows, weights, rows_per_expert);
    // Under autocast the products run in its dtype, as the experts' linear layers' would.
    const auto device = rows.device().type();
    const auto dtype = at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device)
                                                                 : weights.front().scalar_type();
    // As a TensorList, so that autograd takes each weight as an input of the node.
    return GroupedExperts::apply(rows, at::TensorList(weights), rows_per_expert, static_cast<int64_t>(dtype));
}

}  // namespace trainbench
