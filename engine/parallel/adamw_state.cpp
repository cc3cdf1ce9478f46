#include "parallel/adamw_state.h"

#include <map>

#include "parallel/fused_adamw.h"

namespace trainbench {
namespace {

bool decays(const std::string& name, const torch::Tensor& p) {
    return p.dim() >= 2 && name.find("norm") == std::string::npos;
}

}  // namespace

std::vector<std::string> parameterNames(Transformer& model) {
    std::vector<std::string> names;
    for (const auto& item : model->named_parameters()) names.push_back(item.key());
    return names;
}

std::vector<bool> parameterDecays(Transformer& model) {
    std::vector<bool> out;
    for (const auto& item : model->named_parameters()) out.push_back(decays(item.key(), item.value()));
    return out;
}

std::unique_ptr<torch::optim::AdamW> makeAdamW(Transformer& model, const TrainConfig& t) {
    std::vector<torch::Tensor> decayed, kept;
    for (auto& item : model->named_parameters())
        (decays(item.key(), item.value()) ? decayed : kept).push_back(item.value());
    auto options = torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(1e-8);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decayed, std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(t.weight_decay)));
    groups.emplace_back(kept, std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(0.0)));
    return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

NamedTensors adamWState(Transformer& model, torch::optim::AdamW& optimizer) {
    NamedTensors moments;
    auto names = parameterNames(model);
    auto params = model->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
        auto found = optimizer.state().find(params[i].unsafeGetTensorImpl());
        if (found == optimizer.state().end()) continue;  // never stepped
        auto& adam = static_cast<torch::optim::AdamWParamState&>(*found->second);
        moments.emplace_back(names[i] + ".exp_avg", adam.exp_avg());
        moments.emplace_back(names[i] + ".exp_avg_sq", adam.exp_avg_sq());
        moments.emplace_back(names[i] + ".step", torch::tensor(adam.step(), torch::kInt64));
    }
    return moments;
}

void restoreOptimizer(Transformer& model, torch::optim::AdamW& optimizer, const NamedTensors& saved,
                      OptimizerDtype moments) {
    std::map<std::string, torch::Tensor> by_name(saved.begin(), saved.end());
    auto names = parameterNames(model);
    auto params = model->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
        auto avg = by_name.find(names[i] + ".exp_avg");
        if (avg == by_name.end()) continue;
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        state->step(by_name.at(names[i] + ".step").item<int64_t>());
        const torch::ScalarType storage = momentDtype(moments, params[i].scalar_type());
        state->exp_avg(avg->second.to(params[i].device(), storage));
        state->exp_avg_sq(by_name.at(names[i] + ".exp_avg_sq").to(params[i].device(), storage));
        optimizer.state()[params[i].unsafeGetTensorImpl()] = std::move(state);
    }
}

}  // namespace trainbench
