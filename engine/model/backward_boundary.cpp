// The backward boundary of a unit: an identity whose backward first lets the residency act.
#include "model/backward_boundary.h"

namespace trainbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class BackwardBoundary : public torch::autograd::Function<BackwardBoundary> {
public:
    static variable_list forward(AutogradContext* ctx, at::TensorList outputs, WeightResidency* residency, int64_t unit) {
        ctx->saved_data["residency"] = reinterpret_cast<int64_t>(residency);
        ctx->saved_data["unit"] = unit;
        variable_list views;
        // Views, not the inputs themselves: autograd gives each a new history through this node.
        for (const auto& t : outputs) views.push_back(t.view_as(t));
        return views;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto* residency = reinterpret_cast<WeightResidency*>(ctx->saved_data["residency"].toInt());
        residency->beforeBackward(ctx->saved_data["unit"].toInt());
        variable_list out = std::move(grads);
        out.push_back(torch::Tensor());  // residency
        out.push_back(torch::Tensor());  // unit
        return out;
    }
};

}  // namespace

variable_list backwardBoundary(const variable_list& outputs, WeightResidency& residency, int64_t unit) {
    bool any = false;
    for (const auto& t : outputs) any = any || (t.defined() && t.requires_grad());
    if (!any || !torch::GradMode::is_enabled()) return outputs;
    // As a TensorList, so that autograd takes each tensor as an input (a vector would not be).
    return BackwardBoundary::apply(at::TensorList(outputs), &residency, unit);
}

}  // namespace trainbench
