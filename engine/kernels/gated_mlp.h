// The gated MLP w2(silu(w1 x) * w3 x) over groups of rows, each group its own weights, as one
// autograd node on the CPU: the dense layers (one group), the shared experts (one) and the
// routed experts (one per expert).
#pragma once

#include <vector>

#include <torch/torch.h>

namespace trainbench::kernels {

// weights: w1 [I, d], w2 [d, I], w3 [I, d] of each group in turn, for rows [..., d]: whether
// they are shaped so (any device, dtype or strides).
bool gatedMlpShapesAgree(const torch::Tensor& rows, at::TensorList weights);

// Whether gatedMlp takes these: shaped as above, contiguous weights, and cpuKernelsTake.
bool gatedMlpTakes(const torch::Tensor& rows, at::TensorList weights);

// rows [..., d]; the first rows_per_group[0] rows (in row-major order) go through the first
// group's weights, and so on (a count may be 0; the counts add up to the rows). Returns rows'
// shape. Forward: two products into the saved [R, 2I] first projections, the activation, one
// product; backward: the activation's derivative recomputed from them, five products per group.
// Every group's weights get a gradient, zeros for a group without rows.
torch::Tensor gatedMlp(const torch::Tensor& rows, at::TensorList weights, const std::vector<int64_t>& rows_per_group);

}  // namespace trainbench::kernels
