// Gated SiLU MLP.
#include "model/mlp.h"

#include "kernels/fp8_gated_mlp.h"
#include "kernels/gated_mlp.h"
#include "model/linear.h"

namespace trainbench {

MLPImpl::MLPImpl(int64_t dim, int64_t hidden) {
    w1 = register_module("w1", plainLinear(dim, hidden));
    w2 = register_module("w2", plainLinear(hidden, dim));
    w3 = register_module("w3", plainLinear(dim, hidden));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
    const at::Tensor weights[] = {w1->weight, w2->weight, w3->weight};
    // runtime.dtype fp8: the recipe's node, keeping its input and first projections in fp8.
    if (kernels::productPrecision() == kernels::ProductPrecision::kFp8) {
        if (kernels::fp8GatedMlpTakes(x, weights)) return kernels::fp8GatedMlp(x, weights, {x.numel() / x.size(-1)});
        return project(w2, torch::silu(project(w1, x)) * project(w3, x));
    }
    if (kernels::gatedMlpTakes(x, weights)) return kernels::gatedMlp(x, weights, {x.numel() / x.size(-1)});
    return project(w2, torch::silu(project(w1, x)) * project(w3, x));
}

}  // namespace trainbench
