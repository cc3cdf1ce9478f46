// Gated MLP node. With a = x W1^T, b = x W3^T, s = sigmoid(a), h = a s b and y = h W2^T:
//   dL/dh = g W2,  dL/da = dL/dh b s (1 + a (1 - s)),  dL/db = dL/dh a s,
//   dL/dW2 = g^T h,  dL/dW1 = (dL/da)^T x,  dL/dW3 = (dL/db)^T x,  dL/dx = dL/da W1 + dL/db W3.
#include "kernels/gated_mlp.h"

#include <numeric>
#include <stdexcept>

#include "kernels/blas.h"
#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"
#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Element loops over rows [begin, end) of ab [R, 2I] (a then b in each row).
template <typename T>
inline void activationRows(const T* ab, T* h, int64_t begin, int64_t end, int64_t I) {
    for (int64_t r = begin; r < end; ++r) {
        const T* a = ab + r * 2 * I;
        const T* b = a + I;
        T* out = h + r * I;
        #pragma GCC ivdep  // distinct rows of distinct buffers
        for (int64_t j = 0; j < I; ++j) out[j] = a[j] * sigmoid(a[j]) * b[j];
    }
}

template <typename T>
inline void activationBackwardRows(const T* ab, const T* gh, T* h, T* gab, int64_t begin, int64_t end, int64_t I) {
    for (int64_t r = begin; r < end; ++r) {
        const T* a = ab + r * 2 * I;
        const T* b = a + I;
        const T* g = gh + r * I;
        T* hr = h + r * I;
        T* ga = gab + r * 2 * I;
        T* gb = ga + I;
        #pragma GCC ivdep  // distinct rows of distinct buffers
        for (int64_t j = 0; j < I; ++j) {
            const T s = sigmoid(a[j]);
            const T silu = a[j] * s;
            hr[j] = silu * b[j];
            ga[j] = g[j] * b[j] * (s * (T(1) + a[j] * (T(1) - s)));
            gb[j] = g[j] * silu;
        }
    }
}

TRAINBENCH_VECTOR_VARIANTS(activation, activationRows,
                           (const float* ab, float* h, int64_t begin, int64_t end, int64_t I),
                           (ab, h, begin, end, I))
void activation(const double* ab, double* h, int64_t begin, int64_t end, int64_t I) {
    activationRows(ab, h, begin, end, I);
}
TRAINBENCH_VECTOR_VARIANTS(activationBackward, activationBackwardRows,
                           (const float* ab, const float* gh, float* h, float* gab, int64_t begin, int64_t end,
                            int64_t I),
                           (ab, gh, h, gab, begin, end, I))
void activationBackward(const double* ab, const double* gh, double* h, double* gab, int64_t begin, int64_t end,
                        int64_t I) {
    activationBackwardRows(ab, gh, h, gab, begin, end, I);
}

class CpuGatedMlp : public torch::autograd::Function<CpuGatedMlp> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, at::TensorList weights,
                                 std::vector<int64_t> counts) {
        auto x = input.contiguous();
        const int64_t d = x.size(-1), I = weights[0].size(0), R = d > 0 ? x.numel() / d : 0;
        auto ab = at::empty({R, 2 * I}, x.options());
        auto h = at::empty({R, I}, x.options());
        auto y = at::empty(x.sizes(), x.options());
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trainbench_gated_mlp", [&] {
            const scalar_t* X = x.data_ptr<scalar_t>();
            scalar_t *AB = ab.data_ptr<scalar_t>(), *H = h.data_ptr<scalar_t>(), *Y = y.data_ptr<scalar_t>();
            // Each group's two first projections, then each group's last: chains of one product,
            // spread over the threads (gemmChains).
            std::vector<std::vector<Product<scalar_t>>> first, last;
            int64_t start = 0;
            for (size_t e = 0; e < counts.size(); ++e) {
                const int64_t c = counts[e];
                first.push_back({{false, true, c, I, d, scalar_t(1), X + start * d, d,
                                  weights[3 * e].data_ptr<scalar_t>(), d, scalar_t(0), AB + start * 2 * I, 2 * I}});
                first.push_back({{false, true, c, I, d, scalar_t(1), X + start * d, d,
                                  weights[3 * e + 2].data_ptr<scalar_t>(), d, scalar_t(0), AB + start * 2 * I + I,
                                  2 * I}});
                last.push_back({{false, true, c, d, I, scalar_t(1), H + start * I, I,
                                 weights[3 * e + 1].data_ptr<scalar_t>(), I, scalar_t(0), Y + start * d, d}});
                start += c;
            }
            gemmChains(first);
            parallelFor(0, R, itemsPerTask(I), [&](int64_t begin, int64_t end) { activation(AB, H, begin, end, I); });
            gemmChains(last);
        });
        variable_list saved{x, ab};
        for (const auto& w : weights) saved.push_back(w);
        ctx->save_for_backward(saved);
        ctx->saved_data["counts"] = counts;
        saveProductPrecision(ctx);
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const ProductPrecisionScope precision(savedProductPrecision(ctx));
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor &x = saved[0], &ab = saved[1];
        const auto counts = ctx->saved_data["counts"].toIntVector();
        const size_t L = counts.size();
        const int64_t d = x.size(-1), I = saved[2].size(0), R = d > 0 ? x.numel() / d : 0;
        const auto g = grads[0].contiguous();
        auto gh = at::empty({R, I}, x.options());
        auto h = at::empty({R, I}, x.options());
        auto gab = at::empty({R, 2 * I}, x.options());
        auto gx = at::empty(x.sizes(), x.options());
        variable_list out{gx};
        for (size_t i = 2; i < saved.size(); ++i) out.push_back(at::empty(saved[i].sizes(), saved[i].options()));
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trainbench_gated_mlp_backward", [&] {
            const scalar_t *X = x.data_ptr<scalar_t>(), *AB = ab.data_ptr<scalar_t>(), *G = g.data_ptr<scalar_t>();
            scalar_t *GH = gh.data_ptr<scalar_t>(), *H = h.data_ptr<scalar_t>(), *GAB = gab.data_ptr<scalar_t>(),
                     *GX = gx.data_ptr<scalar_t>();
            auto weight = [&](size_t e, int which) { return saved[2 + 3 * e + which].data_ptr<scalar_t>(); };
            std::vector<std::vector<Product<scalar_t>>> into_hidden, weights_and_input;
            int64_t start = 0;
            for (size_t e = 0; e < L; ++e) {
                const int64_t c = counts[e];
                into_hidden.push_back({{false, false, c, I, d, scalar_t(1), G + start * d, d, weight(e, 1), I,
                                        scalar_t(0), GH + start * I, I}});
                scalar_t *g_w1 = out[1 + 3 * e].data_ptr<scalar_t>(), *g_w2 = out[2 + 3 * e].data_ptr<scalar_t>(),
                         *g_w3 = out[3 + 3 * e].data_ptr<scalar_t>();
                const scalar_t *ga = GAB + start * 2 * I, *gb = ga + I;
                weights_and_input.push_back(
                    {{true, false, d, I, c, scalar_t(1), G + start * d, d, H + start * I, I, scalar_t(0), g_w2, I}});
                weights_and_input.push_back(
                    {{true, false, I, d, c, scalar_t(1), ga, 2 * I, X + start * d, d, scalar_t(0), g_w1, d}});
                weights_and_input.push_back(
                    {{true, false, I, d, c, scalar_t(1), gb, 2 * I, X + start * d, d, scalar_t(0), g_w3, d}});
                // The input's gradient adds the two paths: one chain, in this order.
                weights_and_input.push_back(
                    {{false, false, c, d, I, scalar_t(1), ga, 2 * I, weight(e, 0), d, scalar_t(0), GX + start * d, d},
                     {false, false, c, d, I, scalar_t(1), gb, 2 * I, weight(e, 2), d, scalar_t(1), GX + start * d, d}});
                start += c;
            }
            gemmChains(into_hidden);
            parallelFor(0, R, itemsPerTask(I),
                        [&](int64_t begin, int64_t end) { activationBackward(AB, GH, H, GAB, begin, end, I); });
            gemmChains(weights_and_input);
        });
        out.push_back(torch::Tensor());  // counts
        return out;
    }
};

}  // namespace

bool gatedMlpShapesAgree(const torch::Tensor& rows, at::TensorList weights) {
    if (weights.empty() || weights.size() % 3 != 0 || rows.dim() < 1) return false;
    const int64_t d = rows.size(-1), I = weights[0].dim() == 2 ? weights[0].size(0) : -1;
    for (size_t i = 0; i < weights.size(); ++i) {
        const auto& w = weights[i];
        const bool down = i % 3 == 1;
        if (w.dim() != 2 || w.size(0) != (down ? d : I) || w.size(1) != (down ? I : d)) return false;
    }
    return true;
}

bool gatedMlpTakes(const torch::Tensor& rows, at::TensorList weights) {
    if (!gatedMlpShapesAgree(rows, weights) || !cpuKernelsTake({&rows})) return false;
    for (const auto& w : weights)
        if (!w.is_contiguous() || !cpuKernelsTake({&rows, &w})) return false;
    return true;
}

torch::Tensor gatedMlp(const torch::Tensor& rows, at::TensorList weights, const std::vector<int64_t>& rows_per_group) {
    const int64_t d = rows.size(-1), R = d > 0 ? rows.numel() / d : 0;
    if (rows_per_group.size() * 3 != weights.size() ||
        std::accumulate(rows_per_group.begin(), rows_per_group.end(), int64_t(0)) != R)
        throw std::invalid_argument("gated MLP: the groups' row counts do not add up to the rows");
    // As a TensorList, so that autograd takes each weight as an input of the node.
    return CpuGatedMlp::apply(rows, weights, rows_per_group);
}

}  // namespace trainbench::kernels
