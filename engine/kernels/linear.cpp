// The projection's node: the composed form records a transpose, a product and two views, whose
// backwards make about twenty-five dispatches; this one makes two allocations.
#include "kernels/linear.h"

#include "kernels/blas.h"
#include "kernels/cpu_kernels.h"
#include "kernels/fp8_linear.h"
#include "kernels/fp8_linear_cuda.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class CpuLinear : public torch::autograd::Function<CpuLinear> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight) {
        auto rows = x.contiguous();
        auto w = weight.contiguous();
        const int64_t out = w.size(0), in = w.size(1), n = in > 0 ? rows.numel() / in : 0;
        auto sizes = rows.sizes().vec();
        sizes.back() = out;
        auto y = at::empty(sizes, rows.options());
        AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "trainbench_linear", [&] {
            gemm(false, true, n, out, in, scalar_t(1), rows.data_ptr<scalar_t>(), in, w.data_ptr<scalar_t>(), in,
                 scalar_t(0), y.data_ptr<scalar_t>(), out);
        });
        ctx->save_for_backward({rows, w});
        saveProductPrecision(ctx);
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const ProductPrecisionScope precision(savedProductPrecision(ctx));
        const auto saved = ctx->get_saved_variables();
        const auto &rows = saved[0], &w = saved[1];
        const auto g = grads[0].contiguous();
        const int64_t out = w.size(0), in = w.size(1), n = in > 0 ? rows.numel() / in : 0;
        torch::Tensor grad_x, grad_w;
        AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "trainbench_linear_backward", [&] {
            // The two gradients are products of the same size: one per thread (gemmChains).
            std::vector<std::vector<Product<scalar_t>>> chains;
            if (ctx->needs_input_grad(0)) {
                grad_x = at::empty(rows.sizes(), rows.options());
                chains.push_back({{false, false, n, in, out, scalar_t(1), g.data_ptr<scalar_t>(), out,
                                   w.data_ptr<scalar_t>(), in, scalar_t(0), grad_x.data_ptr<scalar_t>(), in}});
            }
            if (ctx->needs_input_grad(1)) {
                grad_w = at::empty(w.sizes(), w.options());
                chains.push_back({{true, false, out, in, n, scalar_t(1), g.data_ptr<scalar_t>(), out,
                                   rows.data_ptr<scalar_t>(), in, scalar_t(0), grad_w.data_ptr<scalar_t>(), in}});
            }
            gemmChains(chains);
        });
        return {grad_x, grad_w};
    }
};

}  // namespace

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight) {
    // runtime.dtype fp8: the recipe's node, emulated on the CPU (on fp32 tensors: an fp64
    // reference run never computes in fp8), on the tensor cores on CUDA.
    if (productPrecision() == ProductPrecision::kFp8) {
        if (x.is_cuda()) return fp8LinearCuda(x, weight);
        if (x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32) return fp8Linear(x, weight);
    }
    if (x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1) && cpuKernelsTake({&x, &weight}))
        return CpuLinear::apply(x, weight);
    return torch::nn::functional::linear(x, weight);
}

}  // namespace trainbench::kernels
