// RMSNorm: normalisation by the root mean square, as in the reference model.
#include "model/rms_norm.h"

namespace trainbench {

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
    weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
    // Statistics in fp32 whatever the compute dtype, like the reference's F.rms_norm under bf16.
    auto x32 = x.to(x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32);
    auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_);
    return (normed * weight.to(normed.scalar_type())).to(x.scalar_type());
}

}  // namespace trainbench
