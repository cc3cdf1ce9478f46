// Causal softmax attention over all heads as one autograd node on the CPU, flash-style: the
// scores are made a block of queries at a time and never kept; the backward makes them again
// from the saved log-sum-exp.
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

// MLA's attention, reading its key where it lies: q [B, T, h, n + r]; kv [B, T, h, n + Dv], the
// up-projection's output whose first n channels are the key's per-head part and the rest the
// value; k_pe [B, T, 1, r], the rotated key part every head shares. Each has its last
// dimension dense. Whether causalAttention takes them.
bool causalAttentionTakes(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& k_pe, int64_t nope);

// out [B, T, h, Dv]: token t of each head attends to tokens 0..t with weights
// softmax(scale q.[kv_n | k_pe]). Saves q, kv, k_pe, out and the log-sum-exp [B, h, T] (no
// T x T scores). The backward returns kv's gradient in kv's layout and k_pe's summed over the
// heads: no split, expand or concatenation of the key, forward or back.
torch::Tensor causalAttention(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& k_pe, int64_t nope,
                              double scale);

}  // namespace trainbench::kernels
