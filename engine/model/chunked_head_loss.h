// The output head and its cross-entropy as one operation over chunks of rows, so that no
// [tokens x vocab] tensor outlives its chunk.
#pragma once

#include <torch/torch.h>

namespace trainbench {

// sum over the counted rows of -log softmax(x W^T)[target], with x [N, d] (the final norm's
// output), W [V, d] (the head's weight), targets [N] (ignore_index: not counted). Rows go
// `chunk_rows` at a time: each chunk's logits, their log-sum-exp (fp32, fp64 for fp64 inputs),
// the target's logit and, when a graph is being made, in the same pass the chunk's gradients
// (dL/dx rows, dL/dW summed over the chunks in fp32) are computed and the logits dropped. The
// backward scales those gradients by the incoming one (the trainer back-propagates raw sums:
// usually 1, which leaves them as they are).
// Precision: the products run at the scope's (kernels/product_precision.h: bf16 operands with
// fp32 accumulation under bf16, autocast's on CUDA); under fp8 at their operands' precision,
// as the recipe keeps the head.
// Memory: one chunk's logits [chunk_rows, V] (their softmax and gradient overwrite them in
// place) while the op runs; from the forward to the backward dL/dx [N, d] and dL/dW [V, d] fp32,
// which the backward hands on.
torch::Tensor chunkedHeadLoss(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& targets,
                              int64_t ignore_index, int64_t chunk_rows);

}  // namespace trainbench
