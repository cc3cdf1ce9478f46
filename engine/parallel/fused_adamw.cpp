// The fused kernel reads each parameter's step from a tensor that the caller has already
// advanced; the optimizer's state keeps it as an integer, which stays the record.
#include "parallel/fused_adamw.h"

#include <stdexcept>

namespace trainbench {

void fusedAdamWStep(torch::optim::AdamW& optimizer, double grad_divisor) {
    torch::NoGradGuard no_grad;
    auto& state = optimizer.state();
    for (auto& group : optimizer.param_groups()) {
        auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
        if (options.amsgrad()) throw std::logic_error("fusedAdamWStep: amsgrad is not used by this trainer");
        std::vector<torch::Tensor> params, grads, averages, squares, steps;
        // Parameters that have taken the same number of steps share one step tensor (usually the
        // whole group): one small allocation per count rather than one per parameter.
        std::vector<std::pair<int64_t, torch::Tensor>> step_tensors;
        auto stepTensor = [&](int64_t count, const torch::Tensor& like) {
            for (auto& [known, tensor] : step_tensors)
                if (known == count && tensor.device() == like.device()) return tensor;
            return step_tensors.emplace_back(count, torch::full({}, double(count), like.options().dtype(torch::kFloat32)))
                .second;
        };
        for (auto& p : group.params()) {
            if (!p.grad().defined()) continue;
            auto found = state.find(p.unsafeGetTensorImpl());
            if (found == state.end()) {
                auto fresh = std::make_unique<torch::optim::AdamWParamState>();
                fresh->step(0);
                fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                found = state.emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
            }
            auto& moments = static_cast<torch::optim::AdamWParamState&>(*found->second);
            if (!p.is_contiguous() || !p.grad().is_contiguous() || !moments.exp_avg().is_contiguous() ||
                !moments.exp_avg_sq().is_contiguous())
                throw std::logic_error("fusedAdamWStep: a parameter, its gradient or its moments are not contiguous");
            moments.step(moments.step() + 1);
            params.push_back(p);
            grads.push_back(p.grad());
            averages.push_back(moments.exp_avg());
            squares.push_back(moments.exp_avg_sq());
            steps.push_back(stepTensor(moments.step(), p));
        }
        if (params.empty()) continue;
        const auto [beta1, beta2] = options.betas();
        fusedAdamWUpdate(params, grads, averages, squares, steps,
                         {options.lr(), beta1, beta2, options.weight_decay(), options.eps()}, grad_divisor);
    }
}

void fusedAdamWUpdate(std::vector<torch::Tensor>& params, std::vector<torch::Tensor>& grads,
                      std::vector<torch::Tensor>& averages, std::vector<torch::Tensor>& squares,
                      std::vector<torch::Tensor>& steps, const AdamWHyper& hyper, double grad_divisor) {
    torch::NoGradGuard no_grad;
    std::optional<torch::Tensor> divisor;  // the kernel takes it as a one-element fp32 tensor
    if (grad_divisor != 1.0 && params[0].scalar_type() == torch::kFloat64) {
        for (auto& g : grads) g.div_(grad_divisor);
    } else if (grad_divisor != 1.0) {
        divisor = torch::full({1}, grad_divisor, params[0].options().dtype(torch::kFloat32));
    }
    at::_fused_adamw_(params, grads, averages, squares, /*max_exp_avg_sqs=*/{}, steps, hyper.lr, hyper.beta1,
                      hyper.beta2, hyper.weight_decay, hyper.eps, /*amsgrad=*/false, /*maximize=*/false, divisor);
}

}  // namespace trainbench
