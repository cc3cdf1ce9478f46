// The cross-entropy of logit rows and its gradient with respect to them, in one pass, in place:
// the output head's per-chunk work on the CPU (model/chunked_head_loss.h).
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

// logits [n, V], contiguous fp32 or fp64 on the CPU, targets [n] int64 (ignore_index: not
// counted). Each counted row becomes softmax(row) - onehot(target), each other row zeros;
// returns the rows' losses [n], log-sum-exp minus the target's logit (0 where not counted).
// One read of the row for its maximum, one for the exponentials and their sum, one to scale
// (vector_math.h's exp, about 1 ulp in fp32; exact libm in fp64); rows in parallel.
// A counted target outside [0, V) throws std::out_of_range naming it.
torch::Tensor softmaxCrossEntropyInPlace(torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore_index);

}  // namespace trainbench::kernels
