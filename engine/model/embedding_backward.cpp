// The embedding's backward without its weights: the gradient is a scatter of the incoming one by
// token id, which needs the ids and the row count only.
#include "model/transformer.h"

namespace trainbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Takes the weight as an input so that autograd accumulates the gradient this backward returns
// into the weight's .grad (its hooks run, its bucket view receives it) exactly as the forward's
// own graph would: the same embedding_backward on the same gradient and ids. Its forward reads
// nothing from the weight, which at ZeRO 3 is not gathered then.
class EmbeddingGradient : public torch::autograd::Function<EmbeddingGradient> {
public:
    static torch::Tensor forward(AutogradContext* ctx, torch::Tensor weight, torch::Tensor tokens, torch::Tensor grad) {
        ctx->saved_data["rows"] = weight.size(0);
        ctx->save_for_backward({tokens, grad});
        return torch::zeros({}, grad.options());
    }

    static variable_list backward(AutogradContext* ctx, variable_list) {
        const auto saved = ctx->get_saved_variables();
        // torch::nn::Embedding's forward: no padding row, no frequency scaling, dense.
        torch::Tensor weight_grad = at::embedding_backward(saved[1], saved[0], ctx->saved_data["rows"].toInt(),
                                                           /*padding_idx=*/-1, /*scale_grad_by_freq=*/false,
                                                           /*sparse=*/false);
        return {weight_grad, torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

void TransformerImpl::embeddingBackward(const torch::Tensor& tokens, const torch::Tensor& grad) {
    torch::AutoGradMode with_graph(true);
    EmbeddingGradient::apply(embed->weight, tokens, grad).backward();
}

}  // namespace trainbench
