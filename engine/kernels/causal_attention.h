// Causal softmax attention over all heads as one autograd node on the CPU, flash-style: the
// scores are made a block of queries at a time and never kept; the backward makes them again
// from the saved log-sum-exp.
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

// q, k [B, T, h, Dqk] and v [B, T, h, Dv], each with its last dimension dense (a channel slice
// of a wider tensor is read in place). Whether causalAttention takes them.
bool causalAttentionTakes(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

// out [B, T, h, Dv]: token t of each head attends to tokens 0..t with weights
// softmax(scale q.k). Saves q, k, v, out and the log-sum-exp [B, h, T] (no T x T scores).
torch::Tensor causalAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale);

}  // namespace trainbench::kernels
