// Activation recomputation of one transformer block or one of its parts: the forward keeps only
// the input; the backward runs the forward again with gradients on and back-propagates through it.
#include "model/transformer.h"

#include "kernels/compute_scope.h"

namespace trainbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The block's parameters are not inputs of this function: the inner backward accumulates their
// gradients straight into .grad (the reduction buckets), as the plain forward's graph would.
// The sequence-wise balance loss of an MoE block is a second output, so its gradient comes
// back here too.
class RecomputedBlock : public torch::autograd::Function<RecomputedBlock> {
public:
    static variable_list forward(AutogradContext* ctx, torch::Tensor x, BlockImpl* block, RotaryTable* rotary,
                                 int64_t part) {
        const c10::DeviceType device = x.device().type();
        const ComputePrecision precision = ComputeScope::active(device);
        ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
        ctx->saved_data["rotary"] = reinterpret_cast<int64_t>(rotary);
        ctx->saved_data["precision"] = static_cast<int64_t>(precision);
        ctx->saved_data["part"] = part;
        ctx->save_for_backward({x});
        torch::Tensor aux;
        // autograd records nothing in here
        torch::Tensor y = block->forwardPart(static_cast<BlockImpl::Part>(part), x, *rotary, aux);
        ctx->saved_data["has_aux"] = aux.defined();
        return aux.defined() ? variable_list{y, aux} : variable_list{y};
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto* block = reinterpret_cast<BlockImpl*>(ctx->saved_data["block"].toInt());
        auto* rotary = reinterpret_cast<RotaryTable*>(ctx->saved_data["rotary"].toInt());
        const bool has_aux = ctx->saved_data["has_aux"].toBool();
        const auto part = static_cast<BlockImpl::Part>(ctx->saved_data["part"].toInt());
        // Sharded weights (runtime.zero_stage 3) are gathered again for a whole block's
        // recomputation: this backward is the block's boundary. (A part's block has one of its
        // own, before the part's backward.)
        if (part == BlockImpl::Part::Whole && block->residency()) block->residency()->beforeBackward(block->unit());
        const torch::Tensor grad_aux = has_aux && grads.size() > 1 ? grads[1] : torch::Tensor();
        // The same precision as the first forward.
        torch::Tensor grad_x = block->recomputedBackward(part, ctx->get_saved_variables()[0], *rotary, grads[0], grad_aux,
                                                         static_cast<ComputePrecision>(ctx->saved_data["precision"].toInt()));
        return {grad_x, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor BlockImpl::recomputedBackward(Part part, const torch::Tensor& saved, RotaryTable& rotary,
                                            const torch::Tensor& grad_y, const torch::Tensor& grad_aux,
                                            ComputePrecision precision) {
    torch::Tensor x = saved.detach().requires_grad_(true);
    torch::Tensor y, aux;
    {
        torch::AutoGradMode with_gradients(true);
        // The forward's precision; the backward below follows its graph.
        ComputeScope scope(x.device().type(), precision);
        // Its tokens were counted by the first forward.
        MoE moe = moe_;
        if (moe) moe->countLoads(false);
        try {
            y = forwardPart(part, x, rotary, aux);
        } catch (...) {
            if (moe) moe->countLoads(true);
            throw;
        }
        if (moe) moe->countLoads(true);
    }
    variable_list outputs{y}, output_grads{grad_y.defined() ? grad_y : torch::zeros_like(y)};
    if (aux.defined() && grad_aux.defined()) {
        outputs.push_back(aux);
        output_grads.push_back(grad_aux);
    }
    torch::autograd::backward(outputs, output_grads);
    return x.grad();
}

torch::Tensor BlockImpl::recomputedForward(Part part, const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux) {
    variable_list out = RecomputedBlock::apply(x, this, &rotary, static_cast<int64_t>(part));
    if (out.size() > 1) seq_aux = seq_aux.defined() ? seq_aux + out[1] : out[1];
    return out[0];
}

}  // namespace trainbench
