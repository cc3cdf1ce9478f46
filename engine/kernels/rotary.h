// Rotary embedding as one autograd node on the CPU: adjacent channel pairs rotated by the
// position's angles, read in place, no complex view and no copy for its layout.
#pragma once

#include <torch/torch.h>

namespace trainbench::kernels {

// x [B, T, H, skip + 2P] with its last dimension dense; cos and sin [T', P], T' >= T, dense,
// of x's dtype. Whether rotate takes them.
bool rotaryTakes(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t skip);

// [B, T, H, skip + 2P], dense: the first `skip` channels as they are, pair j of the rest at
// position t turned by the angle whose cosine and sine are cos[t, j], sin[t, j]:
// (a, b) -> (a c - b s, a s + b c). The backward turns the gradient back by the same angle.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t skip);

}  // namespace trainbench::kernels
