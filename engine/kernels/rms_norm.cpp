// RMSNorm node: a row's sum of squares in sixteen running partial sums added in a fixed order
// (lanes of a vector, whatever its width), then the row scaled; the backward one pass per row.
#include "kernels/rms_norm.h"

#include <cmath>

#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"
#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kBlockRows = 64;  // rows per partial sum of the weight's gradient

// rows [begin, end) of x (row stride `stride`) into y (dense), their r into inv.
template <typename T>
inline void forwardRows(const T* x, int64_t stride, const T* w, T* y, T* inv, int64_t begin, int64_t end, int64_t d,
                        double eps) {
    for (int64_t r = begin; r < end; ++r) {
        const T* xr = x + r * stride;
        const T mean = sumOfProducts(xr, xr, d) / T(d);
        const T scale = T(1) / std::sqrt(mean + T(eps));
        inv[r] = scale;
        T* yr = y + r * d;
        #pragma GCC ivdep  // distinct rows of distinct buffers
        for (int64_t j = 0; j < d; ++j) yr[j] = xr[j] * scale * w[j];
    }
}

// Rows [begin, end): their dL/dx, and their sum of g n into gw_block (d values).
template <typename T>
inline void backwardRows(const T* x, int64_t stride, const T* w, const T* g, const T* inv, T* gx, T* gw_block,
                         int64_t begin, int64_t end, int64_t d) {
    for (int64_t j = 0; j < d; ++j) gw_block[j] = 0;
    for (int64_t r = begin; r < end; ++r) {
        const T *xr = x + r * stride, *gr = g + r * d;
        const T scale = inv[r];
        T* gxr = gx + r * d;
        // mean(g w n) = r mean(g w x); gxr holds g w meanwhile.
        #pragma GCC ivdep  // distinct rows of distinct buffers
        for (int64_t j = 0; j < d; ++j) gxr[j] = gr[j] * w[j];
        const T mean = sumOfProducts(gxr, xr, d) * scale / T(d);
        #pragma GCC ivdep  // distinct rows of distinct buffers
        for (int64_t j = 0; j < d; ++j) {
            const T n = xr[j] * scale;
            gw_block[j] += gr[j] * n;
            gxr[j] = scale * (gxr[j] - n * mean);
        }
    }
}

TRAINBENCH_VECTOR_VARIANTS(normForward, forwardRows,
                           (const float* x, int64_t stride, const float* w, float* y, float* inv, int64_t begin,
                            int64_t end, int64_t d, double eps),
                           (x, stride, w, y, inv, begin, end, d, eps))
void normForward(const double* x, int64_t stride, const double* w, double* y, double* inv, int64_t begin, int64_t end,
                 int64_t d, double eps) {
    forwardRows(x, stride, w, y, inv, begin, end, d, eps);
}
TRAINBENCH_VECTOR_VARIANTS(normBackward, backwardRows,
                           (const float* x, int64_t stride, const float* w, const float* g, const float* inv,
                            float* gx, float* gw_block, int64_t begin, int64_t end, int64_t d),
                           (x, stride, w, g, inv, gx, gw_block, begin, end, d))
void normBackward(const double* x, int64_t stride, const double* w, const double* g, const double* inv, double* gx,
                  double* gw_block, int64_t begin, int64_t end, int64_t d) {
    backwardRows(x, stride, w, g, inv, gx, gw_block, begin, end, d);
}

// x as rows of d dense values a fixed stride apart, or -1 if its layout is not that.
int64_t rowStride(const torch::Tensor& x) {
    const int64_t n = x.dim();
    if (n == 0 || (x.size(-1) > 1 && x.stride(-1) != 1)) return -1;
    if (n == 1) return x.size(0);
    for (int64_t i = 0; i + 2 < n; ++i)
        if (x.size(i) > 1 && x.stride(i) != x.stride(i + 1) * x.size(i + 1)) return -1;
    return x.stride(-2);
}

class CpuRmsNorm : public torch::autograd::Function<CpuRmsNorm> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& weight,
                                 double eps) {
        auto x = rowStride(input) >= 0 ? input : input.contiguous();
        const int64_t d = x.size(-1), R = d > 0 ? x.numel() / d : 0, stride = rowStride(x);
        auto w = weight.contiguous();
        auto y = at::empty(x.sizes(), x.options());
        auto inv = at::empty({R}, x.options());
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trainbench_rms_norm", [&] {
            const scalar_t *X = x.data_ptr<scalar_t>(), *W = w.data_ptr<scalar_t>();
            scalar_t *Y = y.data_ptr<scalar_t>(), *INV = inv.data_ptr<scalar_t>();
            parallelFor(0, R, itemsPerTask(d),
                        [&](int64_t begin, int64_t end) { normForward(X, stride, W, Y, INV, begin, end, d, eps); });
        });
        ctx->save_for_backward({x, w, inv});
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const auto &x = saved[0], &w = saved[1], &inv = saved[2];
        const int64_t d = x.size(-1), R = d > 0 ? x.numel() / d : 0, stride = rowStride(x);
        const auto g = grads[0].contiguous();
        const int64_t blocks = (R + kBlockRows - 1) / kBlockRows;
        auto gx = at::empty(x.sizes(), x.options());
        auto partial = at::empty({std::max<int64_t>(blocks, 1), d}, x.options());
        auto gw = at::empty({d}, w.options());
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trainbench_rms_norm_backward", [&] {
            const scalar_t *X = x.data_ptr<scalar_t>(), *W = w.data_ptr<scalar_t>(), *G = g.data_ptr<scalar_t>(),
                           *INV = inv.data_ptr<scalar_t>();
            scalar_t *GX = gx.data_ptr<scalar_t>(), *P = partial.data_ptr<scalar_t>(), *GW = gw.data_ptr<scalar_t>();
            const int64_t grain = itemsPerTask(kBlockRows * d);
            parallelFor(0, blocks, grain, [&](int64_t first, int64_t last) {
                for (int64_t b = first; b < last; ++b)
                    normBackward(X, stride, W, G, INV, GX, P + b * d, b * kBlockRows,
                                 std::min(R, (b + 1) * kBlockRows), d);
            });
            for (int64_t j = 0; j < d; ++j) GW[j] = 0;
            for (int64_t b = 0; b < blocks; ++b)
                for (int64_t j = 0; j < d; ++j) GW[j] += P[b * d + j];
        });
        return {gx, gw, torch::Tensor()};
    }
};

}  // namespace

bool rmsNormTakes(const torch::Tensor& x, const torch::Tensor& weight) {
    return x.dim() >= 1 && weight.dim() == 1 && x.size(-1) == weight.size(0) && cpuKernelsTake({&x, &weight});
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
    return CpuRmsNorm::apply(x, weight, eps);
}

}  // namespace trainbench::kernels
