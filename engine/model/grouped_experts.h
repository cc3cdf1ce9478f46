// The routed experts of an MoE layer over their rows at once: grouped products, one autograd node.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "model/mlp.h"

namespace trainbench {

// rows [R, d], grouped by expert: the first rows_per_expert[0] rows go to experts[0], and so on
// (a count may be 0). Returns [R, d]: each group through its expert, w2(silu(w1 x) * w3 x).
// Each projection of every expert is one grouped matrix product (at::_grouped_mm) where
// expertsGroupable says so, else a product per expert;
// the backward is written out (the SwiGLU's derivative, the grouped products of the inputs'
// and the weights' gradients), and nothing but the inputs and the two first projections is
// saved: the experts' weights are stacked for a call and dropped, not kept for the backward.
// Every expert gets a gradient, zero for one no row reached. Under autocast the products run
// in its dtype, as a linear layer's would.
// Whether the products are grouped: fp32 or bf16 with rows of 16 bytes (what at::_grouped_mm
// takes), and the experts' weights, stacked for each call, no more elements than the rows or at
// most 8 MiB (so that a large model's experts are not copied per micro-batch on the CPU).
// `one_grouped_kernel` (groupedKernelOn): the rows are on a GPU where the grouped product is one
// kernel (for bf16); there bf16 is always grouped, whatever the stacking costs.
bool expertsGroupable(torch::ScalarType dtype, int64_t rows, int64_t dim, int64_t hidden, size_t experts,
                      bool one_grouped_kernel = false);
// A CUDA device with at::_grouped_mm's single-kernel path (compute capability 9.x or 10.x).
bool groupedKernelOn(const torch::Device& device);

torch::Tensor groupedExperts(const torch::Tensor& rows, const std::vector<MLP>& experts,
                             const std::vector<int64_t>& rows_per_expert);

}  // namespace trainbench
