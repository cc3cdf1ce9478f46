// Tokens to their experts and back: the rows sorted by expert, gathered, and the experts'
// outputs weighted and added onto the shared experts', each one node with its own backward.
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

// The (token, slot) pairs of a routing grouped by expert, token order kept inside an expert.
// Slot s = t k + j is token t's j-th choice; row r is its place in the grouped order.
struct ExpertOrder {
    torch::Tensor counts;    // [E] int64: rows per expert
    torch::Tensor slot_of;   // [N k] int64: the slot at row r
    torch::Tensor token_of;  // [N k] int64: the token at row r (slot_of / k)
    torch::Tensor row_of;    // [N k] int64: the row of slot s (slot_of's inverse)
};

// Whether the written-out dispatch takes these: x [N, d] and weights [N, k] of one dtype
// (cpuKernelsTake), indices [N, k] int64 on the CPU.
bool expertDispatchTakes(const torch::Tensor& x, const torch::Tensor& weights, const torch::Tensor& indices);

// A counting sort of indices [N, k] (experts 0..E-1): stable, one pass to count, one to place.
ExpertOrder sortByExpert(const torch::Tensor& indices, int64_t experts);

// x's rows in the grouped order, [N k, d]. The backward adds each token's k rows' gradients,
// in row order, into its own: no zero-filled buffer and no scattered adds.
torch::Tensor dispatchRows(const torch::Tensor& x, const ExpertOrder& order);

// base [N, d] plus, for every token, its rows of expert_out [N k, d] times their weights
// [N, k], added in row order (the order index_add would). dL/dbase = g;
// dL/dexpert_out[r] = w_s g[t]; dL/dw_s = <g[t], expert_out[r]> for r = row_of[s], t = s / k.
torch::Tensor combineRows(const torch::Tensor& base, const torch::Tensor& expert_out, const torch::Tensor& weights,
                          const ExpertOrder& order);

}  // namespace trainbench::kernels
