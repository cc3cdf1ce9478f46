// The fused kernel reads each parameter's step from a tensor that the caller has already
// advanced; the optimizer's state keeps it as an integer, which stays the record.
#include "parallel/fused_adamw.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "kernels/adamw_bf16_moments.h"

namespace trainbench {
namespace {

// The widening path's chunk: the fp32 copies of two moments of 16 Mi elements (128 MiB) at a time
// at most, so that a GPU's stage-0 step never holds fp32 moments of a whole large parameter.
constexpr int64_t kWidenedChunk = int64_t(1) << 24;

// bf16 moments on the CPU with fp32 parameters: the one-pass kernel, per tensor (each has its
// own step count under torch's optimizer).
void bf16MomentsOnCpu(std::vector<torch::Tensor>& params, std::vector<torch::Tensor>& grads,
                      std::vector<torch::Tensor>& averages, std::vector<torch::Tensor>& squares,
                      std::vector<torch::Tensor>& steps, const AdamWHyper& hyper, double grad_divisor) {
    for (size_t i = 0; i < params.size(); ++i) {
        const double t = steps[i].item<double>();
        kernels::AdamWStepScalars s;
        s.beta1 = float(hyper.beta1);
        s.beta2 = float(hyper.beta2);
        s.one_minus_beta1 = float(1.0 - hyper.beta1);
        s.one_minus_beta2 = float(1.0 - hyper.beta2);
        s.step_size = float(hyper.lr / (1.0 - std::pow(hyper.beta1, t)));
        s.bias2_sqrt = float(std::sqrt(1.0 - std::pow(hyper.beta2, t)));
        s.decay = float(1.0 - hyper.lr * hyper.weight_decay);
        s.eps = float(hyper.eps);
        s.grad_divisor = float(grad_divisor);
        kernels::adamWBf16Moments(params[i].data_ptr<float>(), grads[i].data_ptr<float>(),
                                  reinterpret_cast<uint16_t*>(averages[i].data_ptr<at::BFloat16>()),
                                  reinterpret_cast<uint16_t*>(squares[i].data_ptr<at::BFloat16>()), params[i].numel(), s);
    }
}

// bf16 moments anywhere else: widened to the parameters' dtype a chunk at a time, stepped by
// ATen's kernel, rounded back by the copy (c10::BFloat16's rule: nearest, ties to even).
void bf16MomentsWidened(std::vector<torch::Tensor>& params, std::vector<torch::Tensor>& grads,
                        std::vector<torch::Tensor>& averages, std::vector<torch::Tensor>& squares,
                        std::vector<torch::Tensor>& steps, const AdamWHyper& hyper,
                        const std::optional<torch::Tensor>& divisor) {
    for (size_t i = 0; i < params.size(); ++i) {
        const int64_t n = params[i].numel();
        for (int64_t first = 0; first < n; first += kWidenedChunk) {
            const int64_t count = std::min(kWidenedChunk, n - first);
            auto piece = [&](const torch::Tensor& x) { return x.view({-1}).narrow(0, first, count); };
            torch::Tensor m = piece(averages[i]), v = piece(squares[i]);
            std::vector<torch::Tensor> p{piece(params[i])}, g{piece(grads[i])}, t{steps[i]};
            std::vector<torch::Tensor> wide_m{m.to(params[i].scalar_type())}, wide_v{v.to(params[i].scalar_type())};
            at::_fused_adamw_(p, g, wide_m, wide_v, /*max_exp_avg_sqs=*/{}, t, hyper.lr, hyper.beta1, hyper.beta2,
                              hyper.weight_decay, hyper.eps, /*amsgrad=*/false, /*maximize=*/false, divisor);
            m.copy_(wide_m[0]);
            v.copy_(wide_v[0]);
        }
    }
}

}  // namespace

torch::ScalarType momentDtype(OptimizerDtype moments, torch::ScalarType param) {
    return moments == OptimizerDtype::Bf16 ? torch::kBFloat16 : param;
}

void fusedAdamWStep(torch::optim::AdamW& optimizer, double grad_divisor, OptimizerDtype moment_storage) {
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
                const auto storage = p.options().dtype(momentDtype(moment_storage, p.scalar_type()));
                fresh->exp_avg(torch::zeros_like(p, storage, torch::MemoryFormat::Preserve));
                fresh->exp_avg_sq(torch::zeros_like(p, storage, torch::MemoryFormat::Preserve));
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
    if (averages[0].scalar_type() == torch::kBFloat16 && params[0].scalar_type() != torch::kBFloat16) {
        if (params[0].is_cpu() && params[0].scalar_type() == torch::kFloat32)
            return bf16MomentsOnCpu(params, grads, averages, squares, steps, hyper, grad_divisor);
        return bf16MomentsWidened(params, grads, averages, squares, steps, hyper, divisor);
    }
    at::_fused_adamw_(params, grads, averages, squares, /*max_exp_avg_sqs=*/{}, steps, hyper.lr, hyper.beta1,
                      hyper.beta2, hyper.weight_decay, hyper.eps, /*amsgrad=*/false, /*maximize=*/false, divisor);
}

}  // namespace trainbench
