// RMSNorm: normalisation by the root mean square, as in the reference model.
#include "model/rms_norm.h"

#include "kernels/rms_norm.h"

namespace trainbench {
namespace {

torch::ScalarType statisticsType(const torch::Tensor& x) {
    // Statistics in fp32 whatever the compute dtype, like the reference's F.rms_norm under bf16.
    return x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
}

// One autograd node with a hand-written backward, where the composed form records six (power,
// mean, add, rsqrt and two products) and its backward runs about twice the kernels.
// With n = x r, r = (mean(x^2) + eps)^-1/2 and y = n w:
//   dL/dw = sum over rows of g n,   dL/dx = r (g w - n mean(g w n)).
class RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& weight, double eps) {
        const auto type = statisticsType(x);
        auto x_stat = x.to(type);
        auto inverse_rms = torch::rsqrt(x_stat.square().mean(-1, /*keepdim=*/true).add_(eps));
        ctx->save_for_backward({x, weight, inverse_rms});
        return (x_stat * inverse_rms * weight.to(type)).to(x.scalar_type());
    }

    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads) {
        const auto saved = ctx->get_saved_variables();
        const auto &x = saved[0], &weight = saved[1], &inverse_rms = saved[2];
        const auto type = statisticsType(x);
        auto g = grads[0].to(type);
        auto normed = x.to(type) * inverse_rms;
        auto grad_weight = (g * normed).reshape({-1, x.size(-1)}).sum(0);
        auto g_w = g * weight.to(type);
        auto grad_x = inverse_rms * (g_w - normed * (g_w * normed).mean(-1, /*keepdim=*/true));
        return {grad_x.to(x.scalar_type()), grad_weight.to(weight.scalar_type()), torch::Tensor()};
    }
};

}  // namespace

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
    weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
    if (kernels::rmsNormTakes(x, weight)) return kernels::rmsNorm(x, weight, eps_);
    return RmsNormFunction::apply(x, weight, eps_);
}

}  // namespace trainbench
