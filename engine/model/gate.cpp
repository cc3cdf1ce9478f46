// Router of the reference: the bias changes which experts are chosen, never their weights.
#include "model/gate.h"

#include <limits>

#include "kernels/linear.h"
#include "kernels/product_precision.h"
#include "kernels/router.h"

namespace trainbench {

GateImpl::GateImpl(const ModelConfig& c)
    : topk_(c.n_activated_experts), groups_(c.n_expert_groups), limited_groups_(c.n_limited_groups),
      sigmoid_(scoreFunction(c) == ScoreFunction::Sigmoid), route_scale_(c.route_scale) {
    weight = register_parameter("weight", torch::empty({c.n_routed_experts, c.dim}));
    if (c.hasGateBias()) bias = register_buffer("bias", torch::zeros({c.n_routed_experts}, torch::kFloat32));
}

Routing GateImpl::forward(const torch::Tensor& x, int64_t sequences, double aux_alpha) {
    const int64_t N = x.size(0);
    auto compute = x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    torch::Tensor logits;  // [N, E]
    {
        // The router stays fp32 under bf16 compute (autocast's on CUDA, the kernels' bf16 products
        // on the CPU): which experts a token reaches must not turn on bf16's rounding of close
        // scores. (The node saves the precision, so its backward is fp32 too.)
        c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
        kernels::ProductPrecisionScope operands_precision(kernels::ProductPrecision::kOperands);
        logits = kernels::linear(x.to(compute), weight.to(compute));
    }
    const kernels::RouterOptions options{.topk = topk_, .groups = groups_, .limited_groups = limited_groups_,
                                         .sigmoid = sigmoid_, .route_scale = route_scale_, .sequences = sequences,
                                         .aux_alpha = aux_alpha};
    if (kernels::routerTakes(logits, bias, options)) {
        auto routed = kernels::route(logits, bias, options);
        return {routed.weights, routed.indices, routed.scores, routed.seq_aux};
    }
    auto scores = sigmoid_ ? logits.sigmoid() : logits.softmax(-1);
    auto selection = bias.defined() ? scores + bias.to(compute) : scores;
    if (groups_ > 1) {
        auto grouped = selection.view({N, groups_, -1});  // [N, G, E/G]
        auto group_scores = bias.defined() ? std::get<0>(grouped.topk(2, -1)).sum(-1)  // [N, G]
                                           : std::get<0>(grouped.max(-1));
        auto kept = std::get<1>(group_scores.topk(limited_groups_, -1));              // [N, limited]
        auto dropped = torch::ones({N, groups_}, x.options().dtype(torch::kBool)).scatter(1, kept, false);
        selection = grouped.masked_fill(dropped.unsqueeze(-1), -std::numeric_limits<double>::infinity())
                        .flatten(1);
    }
    // The choice is not differentiable; the weights are (through the original scores).
    auto indices = std::get<1>(selection.detach().topk(topk_, -1));  // [N, k]
    auto weights = scores.gather(1, indices);
    if (sigmoid_) weights = weights / weights.sum(-1, /*keepdim=*/true);
    weights = weights * route_scale_;
    Routing out{weights, indices, scores, {}};
    if (sequences > 0) {
        const int64_t E = scores.size(1), T = N / sequences;
        auto per_seq = torch::zeros({sequences, E}, scores.options())
                           .scatter_add(1, indices.view({sequences, T * topk_}),
                                        torch::ones({sequences, T * topk_}, scores.options()));
        auto f = per_seq * (double(E) / double(topk_ * T));
        auto normalised = scores / scores.sum(-1, /*keepdim=*/true);
        auto P = normalised.view({sequences, T, E}).mean(1);  // [B, E]
        out.seq_aux = aux_alpha * (f * P).sum(-1);             // [B]
    }
    return out;
}

}  // namespace trainbench
