// The gated MLP w2(silu(w1 x) * w3 x) under DeepSeek-V3's fp8 recipe, emulated on the CPU: the
// dense layers (one group), the shared experts (one) and the routed experts (one per expert).
#pragma once

#include <vector>

#include <torch/torch.h>

namespace trainbench::kernels {

// weights: w1 [I, d], w2 [d, I], w3 [I, d] of each group in turn, fp32 on the CPU, as gatedMlp's;
// rows [..., d] fp32 on the CPU. Whether fp8GatedMlp takes these.
bool fp8GatedMlpTakes(const torch::Tensor& rows, at::TensorList weights);

// rows [..., d]; the first rows_per_group[0] rows go through the first group's weights, and so
// on (gatedMlp's contract). Each group's five products take E4M3 operands as fp8Linear's do
// (fp8_linear.h: inputs and output gradients per 1 x 128 tile along the reduction, weights per
// 128 x 128 block, the weight gradients' operands per 128 x 1 tile along the group's own rows)
// and accumulate in fp32. The backward keeps, as the recipe caches them: the input rows in fp8
// (power-of-two tiles, re-cut along the rows for w1's and w3's gradients) and the two first
// projections a = x w1^T and b = x w3^T in fp8 (amax tiles along I); the SwiGLU output
// silu(a) b, w2's input, is recomputed from them rather than kept. Nothing in fp32 beyond the
// weights. A NaN or an infinity on the way raises Fp8NonFiniteError.
torch::Tensor fp8GatedMlp(const torch::Tensor& rows, at::TensorList weights, const std::vector<int64_t>& rows_per_group);

// The bytes one call keeps for its backward for R rows of width d and hidden width I.
int64_t fp8GatedMlpSavedBytes(int64_t rows, int64_t d, int64_t hidden);

}  // namespace trainbench::kernels
