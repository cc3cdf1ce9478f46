// The fp8 projection's node: every operand quantised per tile or block, dequantised, then the
// same fp32 GEMMs as kernels::linear (blas.h), so that the emulation is threaded the same way.
#include "kernels/fp8_linear.h"

#include "kernels/blas.h"
#include "kernels/fp8_blocks.h"
#include "kernels/product_precision.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

const char* const kInputName = "x, the input of an fp8 Linear";
const char* const kWeightName = "W, the weight of an fp8 Linear";
const char* const kGradientName = "dy, the output gradient of an fp8 Linear";

class Fp8Linear : public torch::autograd::Function<Fp8Linear> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight) {
        const int64_t out = weight.size(0), in = weight.size(1);
        const auto rows = x.reshape({-1, in});  // [N, in]
        const int64_t n = rows.size(0);
        // Powers of two: these tiles are re-cut along the tokens for wgrad (fp8_linear.h).
        Fp8Matrix xq = quantiseFp8(rows, Fp8Grouping::kRowTiles, Fp8ScaleRule::kPowerOfTwo, kInputName);
        auto sizes = x.sizes().vec();
        sizes.back() = out;
        auto y = at::empty(sizes, x.options());  // [..., out]
        {
            const auto xd = dequantiseFp8(xq);
            const auto wd = dequantiseFp8(quantiseFp8(weight, Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, kWeightName));
            // The recipe's products are fp32 whatever the thread's precision: a bf16 rounding of
            // the dequantised operands would cut their 4 significant bits times a scale.
            const ProductPrecisionScope fp32(ProductPrecision::kOperands);
            gemm(false, true, n, out, in, 1.0f, xd.data_ptr<float>(), in, wd.data_ptr<float>(), in, 0.0f,
                 y.data_ptr<float>(), out);
        }
        // x is needed only for W's gradient, and then only as fp8; W is re-quantised from the
        // master in the backward rather than kept as an fp8 copy.
        if (weight.requires_grad())
            ctx->save_for_backward({xq.values, xq.scales, weight});
        else
            ctx->save_for_backward({torch::Tensor(), torch::Tensor(), weight});
        ctx->saved_data["x_sizes"] = x.sizes().vec();
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const auto& weight = saved[2];
        const int64_t out = weight.size(0), in = weight.size(1);
        const auto g = grads[0].reshape({-1, out});  // [N, out]
        const int64_t n = g.size(0);
        const ProductPrecisionScope fp32(ProductPrecision::kOperands);
        torch::Tensor grad_x, grad_w;
        // The operands of both products first (dequantised, fp32), then the products together.
        torch::Tensor g_rows, w_blocks, g_tokens, x_tokens;
        std::vector<std::vector<Product<float>>> chains;
        if (ctx->needs_input_grad(0)) {
            // dx [N, in] = dy [N, out] W [out, in]: dy's tiles along `out`, the reduction.
            g_rows = dequantiseFp8(quantiseFp8(g, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, kGradientName));
            w_blocks = dequantiseFp8(quantiseFp8(weight, Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, kWeightName));
            grad_x = at::empty(ctx->saved_data["x_sizes"].toIntVector(), g.options());
            chains.push_back({{false, false, n, in, out, 1.0f, g_rows.data_ptr<float>(), out,
                               w_blocks.data_ptr<float>(), in, 0.0f, grad_x.data_ptr<float>(), in}});
        }
        if (ctx->needs_input_grad(1)) {
            // dW [out, in] = dy^T [out, N] x [N, in]: the reduction runs over the tokens, so both
            // operands are cut into 128 x 1 tiles along them, with power-of-two scales; x from
            // its kept fp8 tiles (dequantised values, exact: powers of two times E4M3 values).
            g_tokens =
                dequantiseFp8(quantiseFp8(g, Fp8Grouping::kColumnTiles, Fp8ScaleRule::kPowerOfTwo, kGradientName));
            const auto x_rows = dequantiseFp8({saved[0], saved[1], Fp8Grouping::kRowTiles});
            x_tokens =
                dequantiseFp8(quantiseFp8(x_rows, Fp8Grouping::kColumnTiles, Fp8ScaleRule::kPowerOfTwo, kInputName));
            grad_w = at::empty({out, in}, weight.options());
            chains.push_back({{true, false, out, in, n, 1.0f, g_tokens.data_ptr<float>(), out,
                               x_tokens.data_ptr<float>(), in, 0.0f, grad_w.data_ptr<float>(), in}});
        }
        gemmChains(chains);
        return {grad_x, grad_w};
    }
};

}  // namespace

torch::Tensor fp8Linear(const torch::Tensor& x, const torch::Tensor& weight) {
    TORCH_CHECK(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1) && weight.size(1) > 0,
                "fp8Linear: x [..., in] and W [out, in] with in > 0, got ", x.sizes(), " and ", weight.sizes());
    TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu() && x.scalar_type() == torch::kFloat32 &&
                    weight.scalar_type() == torch::kFloat32,
                "fp8Linear emulates the fp8 recipe on fp32 CPU tensors, got x ", x.scalar_type(), " on ", x.device(),
                " and W ", weight.scalar_type(), " on ", weight.device());
    return Fp8Linear::apply(x, weight);
}

int64_t fp8LinearSavedBytes(int64_t tokens, int64_t in) { return fp8Bytes(tokens, in, Fp8Grouping::kRowTiles); }

}  // namespace trainbench::kernels
