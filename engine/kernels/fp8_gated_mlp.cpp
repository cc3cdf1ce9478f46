// The fp8 gated MLP's node. With a = x W1^T, b = x W3^T, s = sigmoid(a), h = a s b, y = h W2^T:
//   dL/dh = g W2,  dL/da = dL/dh b s (1 + a (1 - s)),  dL/db = dL/dh a s,
//   dL/dW2 = g^T h,  dL/dW1 = (dL/da)^T x,  dL/dW3 = (dL/db)^T x,  dL/dx = dL/da W1 + dL/db W3,
// every product on dequantised E4M3 operands (fp8_blocks.h), in fp32.
#include "kernels/fp8_gated_mlp.h"

#include <numeric>
#include <stdexcept>

#include "kernels/fp8_blocks.h"
#include "kernels/gated_mlp.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

const char* const kInputName = "x, the input of an fp8 gated MLP";
const char* const kWeightName = "a weight of an fp8 gated MLP";
const char* const kHiddenName = "the SwiGLU output of an fp8 gated MLP";
const char* const kFirstName = "the first projections of an fp8 gated MLP";
const char* const kGradientName = "dy, the output gradient of an fp8 gated MLP";
const char* const kHiddenGradientName = "the hidden gradient of an fp8 gated MLP";

// The recipe's operand forms, each dequantised to fp32 for the product.
torch::Tensor weightBlocks(const torch::Tensor& w) {
    return dequantiseFp8(quantiseFp8(w, Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, kWeightName));
}
// Along the reduction of a forward or dgrad product. Powers of two where the same tiles are
// re-cut along the rows later (fp8_linear.h says why).
torch::Tensor rowTiles(const torch::Tensor& m, Fp8ScaleRule rule, const char* what) {
    return dequantiseFp8(quantiseFp8(m, Fp8Grouping::kRowTiles, rule, what));
}
// Along the rows of one group: a weight gradient's reduction runs over the group's rows only.
torch::Tensor columnTiles(const torch::Tensor& m, const char* what) {
    return dequantiseFp8(quantiseFp8(m, Fp8Grouping::kColumnTiles, Fp8ScaleRule::kPowerOfTwo, what));
}

class Fp8GatedMlp : public torch::autograd::Function<Fp8GatedMlp> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, at::TensorList weights,
                                 std::vector<int64_t> counts) {
        const int64_t d = input.size(-1), I = weights[0].size(0);
        const auto x = input.reshape({-1, d});
        const int64_t R = x.size(0);
        Fp8Matrix xq = quantiseFp8(x, Fp8Grouping::kRowTiles, Fp8ScaleRule::kPowerOfTwo, kInputName);
        const auto xd = dequantiseFp8(xq);
        auto ab = at::empty({R, 2 * I}, x.options());
        auto y = at::empty({R, d}, x.options());
        int64_t start = 0;
        for (size_t e = 0; e < counts.size(); ++e) {
            const int64_t c = counts[e];
            if (c > 0) {
                const auto rows = xd.narrow(0, start, c);
                ab.narrow(0, start, c).narrow(1, 0, I).copy_(rows.mm(weightBlocks(weights[3 * e]).t()));
                ab.narrow(0, start, c).narrow(1, I, I).copy_(rows.mm(weightBlocks(weights[3 * e + 2]).t()));
            }
            start += c;
        }
        const auto a = ab.narrow(1, 0, I), b = ab.narrow(1, I, I);
        // w2's input in powers of two, as fp8Linear takes an input: the fused node and the
        // composed one (three fp8Linear calls) give the same forward.
        const auto h = rowTiles(at::silu(a) * b, Fp8ScaleRule::kPowerOfTwo, kHiddenName);
        start = 0;
        for (size_t e = 0; e < counts.size(); ++e) {
            const int64_t c = counts[e];
            if (c > 0) {
                auto rows = y.narrow(0, start, c);
                at::mm_out(rows, h.narrow(0, start, c), weightBlocks(weights[3 * e + 1]).t());
            }
            start += c;
        }
        Fp8Matrix aq = quantiseFp8(a, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, kFirstName);
        Fp8Matrix bq = quantiseFp8(b, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, kFirstName);
        variable_list saved{xq.values, xq.scales, aq.values, aq.scales, bq.values, bq.scales};
        for (const auto& w : weights) saved.push_back(w);
        ctx->save_for_backward(saved);
        ctx->saved_data["counts"] = counts;
        ctx->saved_data["sizes"] = input.sizes().vec();
        return y.view(input.sizes());
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const auto counts = ctx->saved_data["counts"].toIntVector();
        const size_t L = counts.size();
        const auto x = dequantiseFp8({saved[0], saved[1], Fp8Grouping::kRowTiles});
        const auto a = dequantiseFp8({saved[2], saved[3], Fp8Grouping::kRowTiles});
        const auto b = dequantiseFp8({saved[4], saved[5], Fp8Grouping::kRowTiles});
        auto weight = [&](size_t e, int which) -> const torch::Tensor& { return saved[6 + 3 * e + which]; };
        const int64_t d = x.size(1), I = a.size(1), R = x.size(0);
        const auto g = grads[0].reshape({R, d});
        // The SwiGLU output and its derivative, recomputed from the fp8 first projections.
        const auto s = at::sigmoid(a);
        const auto silu = a * s;
        const auto h = silu * b;
        // dL/dh = g W2 per group, g in tiles along d.
        const auto g_rows = rowTiles(g, Fp8ScaleRule::kAmax, kGradientName);
        auto gh = at::empty({R, I}, x.options());
        int64_t start = 0;
        for (size_t e = 0; e < L; ++e) {
            const int64_t c = counts[e];
            if (c > 0) {
                auto rows = gh.narrow(0, start, c);
                at::mm_out(rows, g_rows.narrow(0, start, c), weightBlocks(weight(e, 1)));
            }
            start += c;
        }
        const auto ga = gh * b * (s * (1 + a * (1 - s)));
        const auto gb = gh * silu;
        const auto ga_rows = rowTiles(ga, Fp8ScaleRule::kAmax, kHiddenGradientName);
        const auto gb_rows = rowTiles(gb, Fp8ScaleRule::kAmax, kHiddenGradientName);
        auto gx = at::empty({R, d}, x.options());
        variable_list out{gx};
        start = 0;
        for (size_t e = 0; e < L; ++e) {
            const int64_t c = counts[e];
            torch::Tensor g_w1, g_w2, g_w3;
            if (c > 0) {
                auto gx_rows = gx.narrow(0, start, c);
                at::mm_out(gx_rows, ga_rows.narrow(0, start, c), weightBlocks(weight(e, 0)));
                gx_rows.addmm_(gb_rows.narrow(0, start, c), weightBlocks(weight(e, 2)));
                // The weight gradients' operands in tiles along this group's rows.
                const auto x_tokens = columnTiles(x.narrow(0, start, c), kInputName);
                g_w2 = columnTiles(g.narrow(0, start, c), kGradientName).t().mm(columnTiles(h.narrow(0, start, c), kHiddenName));
                g_w1 = columnTiles(ga.narrow(0, start, c), kHiddenGradientName).t().mm(x_tokens);
                g_w3 = columnTiles(gb.narrow(0, start, c), kHiddenGradientName).t().mm(x_tokens);
            } else {
                g_w1 = at::zeros_like(weight(e, 0));
                g_w2 = at::zeros_like(weight(e, 1));
                g_w3 = at::zeros_like(weight(e, 2));
            }
            out.push_back(g_w1);
            out.push_back(g_w2);
            out.push_back(g_w3);
            start += c;
        }
        out[0] = gx.view(ctx->saved_data["sizes"].toIntVector());
        out.push_back(torch::Tensor());  // counts
        return out;
    }
};

}  // namespace

bool fp8GatedMlpTakes(const torch::Tensor& rows, at::TensorList weights) {
    const auto fp32OnCpu = [](const torch::Tensor& t) { return t.is_cpu() && t.scalar_type() == torch::kFloat32; };
    if (!gatedMlpShapesAgree(rows, weights) || !fp32OnCpu(rows) || rows.size(-1) == 0 || weights[0].size(0) == 0)
        return false;
    for (const auto& w : weights)
        if (!fp32OnCpu(w)) return false;
    return true;
}

torch::Tensor fp8GatedMlp(const torch::Tensor& rows, at::TensorList weights, const std::vector<int64_t>& rows_per_group) {
    const int64_t d = rows.size(-1), R = d > 0 ? rows.numel() / d : 0;
    if (rows_per_group.size() * 3 != weights.size() ||
        std::accumulate(rows_per_group.begin(), rows_per_group.end(), int64_t(0)) != R)
        throw std::invalid_argument("fp8 gated MLP: the groups' row counts do not add up to the rows");
    return Fp8GatedMlp::apply(rows, weights, rows_per_group);
}

int64_t fp8GatedMlpSavedBytes(int64_t rows, int64_t d, int64_t hidden) {
    return fp8Bytes(rows, d, Fp8Grouping::kRowTiles) + 2 * fp8Bytes(rows, hidden, Fp8Grouping::kRowTiles);
}

}  // namespace trainbench::kernels
