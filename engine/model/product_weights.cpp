// productWeightMask: the linear layers' weights, found by module type rather than by name.
#include "model/product_weights.h"

#include <unordered_set>

namespace trainbench {

std::vector<bool> productWeightMask(const Transformer& model) {
    std::unordered_set<const void*> linear_weights;
    for (const auto& module : model->modules(/*include_self=*/false))
        if (const auto* linear = module->as<torch::nn::LinearImpl>())
            linear_weights.insert(linear->weight.unsafeGetTensorImpl());
    std::vector<bool> mask;
    for (const auto& p : model->parameters()) mask.push_back(linear_weights.count(p.unsafeGetTensorImpl()) > 0);
    return mask;
}

}  // namespace trainbench
