#include "kernels/rotary.h"

#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows (b, t, h) of x (strides sb, st, sh; channels dense) into dense y, turned by +angle or
// (inverse) -angle.
template <typename T>
void turnRows(const T* x, int64_t sb, int64_t st, int64_t sh, int64_t B, int64_t Tn, int64_t H, int64_t D,
              int64_t skip, const T* cos, const T* sin, int64_t pairs, bool inverse, T* y) {
    const int64_t rows = B * Tn * H;
    parallelFor(0, rows, itemsPerTask(D), [&](int64_t first, int64_t last) {
        for (int64_t row = first; row < last; ++row) {
            const int64_t h = row % H, t = (row / H) % Tn, b = row / (H * Tn);
            const T* in = x + b * sb + t * st + h * sh;
            T* out = y + row * D;
            for (int64_t j = 0; j < skip; ++j) out[j] = in[j];
            const T *c = cos + t * pairs, *s = sin + t * pairs;
            for (int64_t j = 0; j < pairs; ++j) {
                const T a = in[skip + 2 * j], bb = in[skip + 2 * j + 1];
                if (inverse) {
                    out[skip + 2 * j] = a * c[j] + bb * s[j];
                    out[skip + 2 * j + 1] = bb * c[j] - a * s[j];
                } else {
                    out[skip + 2 * j] = a * c[j] - bb * s[j];
                    out[skip + 2 * j + 1] = a * s[j] + bb * c[j];
                }
            }
        }
    });
}

torch::Tensor turn(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t skip,
                   bool inverse) {
    const int64_t B = x.size(0), T = x.size(1), H = x.size(2), D = x.size(3);
    auto y = at::empty({B, T, H, D}, x.options().memory_format(at::MemoryFormat::Contiguous));
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trainbench_rotary", [&] {
        turnRows(x.data_ptr<scalar_t>(), x.stride(0), x.stride(1), x.stride(2), B, T, H, D, skip,
                 cos.data_ptr<scalar_t>(), sin.data_ptr<scalar_t>(), cos.size(1), inverse, y.data_ptr<scalar_t>());
    });
    return y;
}

class CpuRotary : public torch::autograd::Function<CpuRotary> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, int64_t skip) {
        ctx->save_for_backward({cos, sin});
        ctx->saved_data["skip"] = skip;
        return turn(x, cos, sin, skip, /*inverse=*/false);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        return {turn(grads[0], saved[0], saved[1], ctx->saved_data["skip"].toInt(), /*inverse=*/true), torch::Tensor(),
                torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

bool rotaryTakes(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t skip) {
    if (x.dim() != 4 || cos.dim() != 2 || sin.sizes() != cos.sizes()) return false;
    if ((x.stride(3) != 1 && x.size(3) > 1) || !cos.is_contiguous() || !sin.is_contiguous()) return false;
    if (cos.size(0) < x.size(1) || skip < 0 || x.size(3) != skip + 2 * cos.size(1)) return false;
    return cpuKernelsTake({&x, &cos, &sin});
}

torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t skip) {
    return CpuRotary::apply(x, cos, sin, skip);
}

}  // namespace trainbench::kernels
