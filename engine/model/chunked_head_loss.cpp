// The chunked head: forward and the gradients in one pass per chunk, the backward a scaling.
#include "model/chunked_head_loss.h"

#include "kernels/linear.h"

namespace trainbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class ChunkedHeadLoss : public torch::autograd::Function<ChunkedHeadLoss> {
public:
    static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor weight, torch::Tensor targets,
                                 int64_t ignore_index, int64_t chunk_rows) {
        torch::NoGradGuard no_graph;
        const auto compute = x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
        const int64_t rows = x.size(0);
        const bool want_x = x.requires_grad(), want_weight = weight.requires_grad();
        torch::Tensor grad_x = want_x ? torch::empty_like(x) : torch::Tensor();
        torch::Tensor grad_weight = want_weight ? torch::zeros(weight.sizes(), weight.options().dtype(compute)) : torch::Tensor();
        torch::Tensor sum = torch::zeros({}, x.options().dtype(compute));
        for (int64_t start = 0; start < rows; start += chunk_rows) {
            const int64_t n = std::min(chunk_rows, rows - start);
            const torch::Tensor rows_x = x.narrow(0, start, n);
            const torch::Tensor rows_targets = targets.narrow(0, start, n);
            const torch::Tensor logits = kernels::linear(rows_x, weight).to(compute);  // [n, V]
            const torch::Tensor counted = rows_targets.ne(ignore_index);
            const torch::Tensor safe = rows_targets.masked_fill(counted.logical_not(), 0).unsqueeze(1);
            const torch::Tensor lse = logits.logsumexp(1, /*keepdim=*/true);  // [n, 1]
            const torch::Tensor picked = logits.gather(1, safe);                // [n, 1]
            sum += (lse - picked).squeeze(1).masked_fill(counted.logical_not(), 0).sum();
            if (!want_x && !want_weight) continue;
            // dL/dlogits of a summed cross-entropy: softmax minus the target's one-hot, zero on
            // rows that are not counted.
            torch::Tensor grad_logits = (logits - lse).exp_();
            grad_logits.scatter_add_(1, safe, torch::full({n, 1}, -1.0, grad_logits.options()));
            grad_logits.masked_fill_(counted.logical_not().unsqueeze(1), 0);
            const torch::Tensor g = grad_logits.to(x.scalar_type());
            if (want_x) grad_x.narrow(0, start, n).copy_(g.matmul(weight.to(x.scalar_type())));
            if (want_weight) grad_weight.add_(g.t().matmul(rows_x).to(compute));
        }
        ctx->save_for_backward({grad_x, grad_weight});
        ctx->saved_data["weight_dtype"] = static_cast<int64_t>(weight.scalar_type());
        return sum;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& g = grad_outputs[0];
        // The trainer back-propagates raw token-loss sums: a gradient of exactly 1 leaves the
        // precomputed gradients' bits as they are.
        const bool unit = g.numel() == 1 && g.item<double>() == 1.0;
        auto scaled = [&](const torch::Tensor& t) { return !t.defined() ? t : unit ? t : t * g.to(t.scalar_type()); };
        torch::Tensor grad_weight = saved[1];
        if (grad_weight.defined())
            grad_weight = scaled(grad_weight).to(static_cast<torch::ScalarType>(ctx->saved_data["weight_dtype"].toInt()));
        return {scaled(saved[0]), grad_weight, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor chunkedHeadLoss(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& targets,
                              int64_t ignore_index, int64_t chunk_rows) {
    TORCH_CHECK(chunk_rows > 0, "chunkedHeadLoss: chunk_rows must be positive");
    return ChunkedHeadLoss::apply(x, weight, targets, ignore_index, chunk_rows);
}

}  // namespace trainbench
