// The multi-token-prediction module and its targets.
#include "model/mtp_module.h"

#include "model/linear.h"
#include "model/transformer.h"

namespace trainbench {

// A model whose every layer is dense gets a dense module (index 0 picks the dense kind).
MtpModuleImpl::MtpModuleImpl(int64_t layer, const ModelConfig& c)
    : BlockImpl(c.n_dense_layers >= c.n_layers ? 0 : layer, c) {
    enorm = register_module("enorm", RMSNorm(c.dim));
    hnorm = register_module("hnorm", RMSNorm(c.dim));
    eh_proj = register_module("eh_proj", plainLinear(2 * c.dim, c.dim));
    norm = register_module("norm", RMSNorm(c.dim));
}

torch::Tensor MtpModuleImpl::join(const torch::Tensor& e, const torch::Tensor& h) {
    return project(eh_proj, torch::cat({enorm(e), hnorm(h)}, -1));
}

std::string mtpLayerName(const std::string& name, int64_t n_layers) {
    if (name.rfind("mtp.", 0) != 0) return name;
    const size_t dot = name.find('.', 4);
    if (dot == std::string::npos) return name;
    const int64_t module = std::stoll(name.substr(4, dot - 4));
    return "layers." + std::to_string(n_layers + module) + name.substr(dot);
}

torch::Tensor mtpTargets(const torch::Tensor& targets, int64_t k) {
    return targets.narrow(1, k, targets.size(1) - k);
}

torch::Tensor mtpTargetCounts(const torch::Tensor& targets, int64_t depth) {
    auto counts = torch::zeros({1 + depth}, torch::kInt64);
    auto* out = counts.data_ptr<int64_t>();
    const auto counted = targets.ne(kIgnoreIndex).cpu();
    out[0] = counted.sum().item<int64_t>();
    for (int64_t k = 1; k <= depth && k < targets.size(1); ++k) out[k] = mtpTargets(counted, k).sum().item<int64_t>();
    return counts;
}

}  // namespace trainbench
