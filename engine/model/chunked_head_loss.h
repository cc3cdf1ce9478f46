// The output head and its cross-entropy as one operation over chunks of rows, so that no
// [tokens x vocab] tensor outlives its chunk.
#pragma once

#include <torch/torch.h>

namespace trainbench {

// sum over the counted rows of -log softmax(x W^T)[target], with x [N, d] (the final norm's
// output), W [V, d] (the head's weight), targets [N] (ignore_index: not counted). Rows go
// `chunk_rows` at a time: each chunk's logits, their log-sum-exp (fp32, fp64 for fp64 inputs),
// the target's logit and, in the same pass, the chunk's gradients (dL/dx rows, dL/dW summed over
// chunks) are computed and the logits dropped. The backward scales those gradients by the
// incoming one (the trainer back-propagates raw sums: usually 1, then used as they are).
// Memory: the logits and probabilities of one chunk, [chunk_rows, V], and dL/dx and dL/dW,
// which the backward returns anyway.
torch::Tensor chunkedHeadLoss(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& targets,
                              int64_t ignore_index, int64_t chunk_rows);

}  // namespace trainbench
