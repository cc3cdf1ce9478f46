// The projection y = x W^T with DeepSeek-V3's fp8 recipe emulated on the CPU: the numerical
// reference of the recipe (docs/design/fp8.md), not a speed path.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace trainbench::kernels {

// x [..., in], W [out, in], both fp32 on the CPU -> y [..., out] fp32. Each of the three
// products takes E4M3 operands (fp8_blocks.h), dequantised to fp32 for an fp32 GEMM (the
// recipe's fp32 accumulation, exactly; tensor cores accumulate less precisely, so this bounds
// the recipe's accuracy from above):
//   forward  y  = x W^T:  x per 1 x 128 tile along `in`, W per 128 x 128 block
//   dgrad    dx = dy W:   dy per 1 x 128 tile along `out`, W per 128 x 128 block
//   wgrad    dW = dy^T x: dy and x per 128 x 1 tile along the tokens
// x's tiles are the ones re-laid out (1 x 128 kept, 128 x 1 read by wgrad), so they take
// power-of-two scales at both ends: the re-cut then only shifts exponents and rounds nothing
// but subnormals, where amax scales would round x a second time (wgrad's error against the
// unquantised product, Gaussian data: 0.038 against 0.046). dy along the tokens is cut from
// fp32 and takes powers of two too; the other operands take amax / 448.
// The backward keeps x only as fp8 (1 byte per element and one fp32 scale per 1 x 128 tile;
// nothing where W needs no gradient) and re-quantises W from the fp32 master, keeping no fp8
// copy of it. A NaN or an infinity in x, W or dy raises Fp8NonFiniteError.
torch::Tensor fp8Linear(const torch::Tensor& x, const torch::Tensor& weight);

// The bytes one call keeps for its backward beyond the weight (which the caller holds anyway),
// for `tokens` rows of `in` features: the fp8 x and its tile scales.
int64_t fp8LinearSavedBytes(int64_t tokens, int64_t in);

}  // namespace trainbench::kernels
