// The MoE router after its product, as one autograd node: scores, the balancing bias, the
// group-limited top-k choice, the routing weights and the sequence-wise balance loss.
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

struct RouterOptions {
    int64_t topk = 1;
    int64_t groups = 1;          // experts in `groups` equal groups; at most `limited_groups` of them
    int64_t limited_groups = 1;  // per token, ranked by their best score (top-two sum with a bias)
    bool sigmoid = true;         // scores by sigmoid, else softmax over the experts
    double route_scale = 1.0;
    // The sequence-wise balance loss over `sequences` of equal length (the logits' rows in
    // order), weighted by aux_alpha; none when sequences is 0.
    int64_t sequences = 0;
    double aux_alpha = 0.0;
};

struct RoutedTokens {
    torch::Tensor weights;  // [N, k] route_scale applied, the logits' dtype
    torch::Tensor indices;  // [N, k] int64, best first (by score plus bias)
    torch::Tensor scores;   // [N, E] sigmoid or softmax of the logits, no bias
    torch::Tensor seq_aux;  // [sequences] aux_alpha sum_e f_e P_e, or undefined
};

// Whether route takes these logits [N, E] and bias [E] (or undefined): cpuKernelsTake and the
// shapes, the experts dividing into the groups.
bool routerTakes(const torch::Tensor& logits, const torch::Tensor& bias, const RouterOptions& options);

// One pass per token where the composed form records some thirty operators. The choice is not
// differentiable (ties go to the lower expert index); weights, scores and the balance loss are,
// with respect to the logits. With s the scores, chosen i_1..i_k, S = sum_j s_ij:
//   sigmoid: w_j = c s_ij / S,  dL/ds_ij += c (g_j - sum_m g_m s_im / S) / S,  dL/dl = ds s (1 - s)
//   softmax: w_j = c s_ij,      dL/ds_ij += c g_j,                          dL/dl = s (ds - <ds, s>)
// and the balance loss of sequence b, f_e = E / (k T) (tokens of b routed to e) held constant:
//   aux_b = alpha sum_e f_e mean_t (s_te / Z_t),  Z_t = sum_e s_te,
//   dL/ds_te += (alpha g_b / T) (f_e - sum_e' f_e' s_te' / Z_t) / Z_t.
RoutedTokens route(const torch::Tensor& logits, const torch::Tensor& bias, const RouterOptions& options);

}  // namespace trainbench::kernels
