// The fp8 projection on CUDA (compute capability 9.0): DeepSeek-V3's recipe on the tensor cores
// through at::_scaled_mm_v2, quantised with the same groups and scale rules as the CPU
// emulation (fp8_linear.h), which is its numerical reference (docs/design/fp8.md).
#pragma once

#include <string>
#include <vector>

#include <ATen/BlasBackend.h>
#include <torch/torch.h>

#include "kernels/fp8_blocks.h"

namespace trainbench::kernels {

// x [..., in] (fp32 or bf16), W [out, in] fp32 (or bf16: offload's device weights, quantised as
// they are) on one CUDA device -> y [..., out] in x's dtype. Forward and dgrad: 1 x 128 tiles
// times 128 x 128 blocks; wgrad: 1 x 128 times 1 x 128 along the tokens, the product added into
// W's fp32 gradient (fp32 for a bf16 W too: its grad_dtype). Keeps x as fp8 and its scales only.
torch::Tensor fp8LinearCuda(const torch::Tensor& x, const torch::Tensor& weight);

// "" when `device_index`'s GPU runs the block-scaled fp8 products (compute capability 9.0),
// else why not, naming runtime.dtype and the device.
std::string fp8CudaUnsupportedReason(int device_index);

// ---------------------------------------------------------------------------------------------
// The pieces of fp8LinearCuda, exposed so that the tests can run them on the CPU.

// fp8Scale (fp8_blocks.h) on every element of `amax` (fp32, finite, >= 0), in tensor ops on the
// tensor's device: the same fp32 bits.
torch::Tensor fp8ScalesOf(const torch::Tensor& amax, Fp8ScaleRule rule);

// quantiseFp8 in tensor ops, on any device: a 2-D matrix (fp32, bf16 or fp16; any strides) to
// the same E4M3 values and fp32 scales, bit for bit, in the same shapes (partial edge groups
// included). A NaN or an infinity raises Fp8NonFiniteError with quantiseFp8's message, naming
// the first non-finite element in row-major order; the check costs one device-to-host sync.
Fp8Matrix quantiseFp8Tensors(const torch::Tensor& matrix, Fp8Grouping grouping, Fp8ScaleRule rule,
                             const std::string& what);

// The scale tensors at::_scaled_mm_v2 takes on SM90 for an operand whose groups run along the
// reduction K (cuBLASLt's VEC128_32F and BLK128x128_32F layouts):
//   1 x 128 tiles: scales [R, K/128] of an operand with R rows along M (mat_a) or N (mat_b, given
//     as its transpose [N, K]), laid out R-major: the same shape with strides (1, R).
torch::Tensor scaledMmTileScales(const torch::Tensor& scales);
//   128 x 128 blocks of mat_b [K, N], given as the scales [N/128, K/128] of its transpose [N, K]
//     (W's own blocks in the forward): [L4, N/128] with strides (1, L4), L4 = K/128 rounded up
//     to a multiple of 4, the rows past K/128 zero (cuBLASLt never reads them: no K is there).
torch::Tensor scaledMmBlockScales(const torch::Tensor& scales);

// A matrix quantised from high precision: `finite` a 0-dim bool on its device, true when every
// group's largest |value| was finite; `matrix` and `what` name it in Fp8NonFiniteError.
struct Fp8FiniteCheck {
    torch::Tensor finite;
    torch::Tensor matrix;
    const char* what;
};

// One product as at::_scaled_mm_v2 takes it on SM90: a [M, K] row-major and b [K, N]
// column-major, E4M3, every side padded with zeros to a multiple of 128; the scales in the
// layouts above under `a_recipe` and `b_recipe`. The product is the result's first rows x cols.
struct Fp8ScaledMm {
    torch::Tensor a, a_scales, b, b_scales;
    at::blas::ScalingType a_recipe = at::blas::ScalingType::BlockWise1x128;
    at::blas::ScalingType b_recipe = at::blas::ScalingType::BlockWise1x128;
    int64_t rows = 0, cols = 0;
    std::vector<Fp8FiniteCheck> checks;  // to pass before the product runs
};

// The three products of y = x W^T, on the 2-D x `rows` [N, in], W [out, in] and dy [N, out]
// (any device, any floating dtype; W's gradient fp32):
//   forward  y  = x W^T:  x 1 x 128 tiles (powers of two) times W's 128 x 128 blocks (amax);
//                         `kept_x` receives x's padded tiles, what the backward keeps
//   dgrad    dx = dy W:   dy 1 x 128 tiles along `out` (amax) times W's blocks
//   wgrad    dW = dy^T x: dy and x (re-cut from kept_x) in 128 x 1 tiles along the tokens
//                         (powers of two), each as 1 x 128 tiles of its transpose
Fp8ScaledMm fp8ForwardProduct(const torch::Tensor& rows, const torch::Tensor& weight, Fp8Matrix* kept_x);
Fp8ScaledMm fp8DgradProduct(const torch::Tensor& dy, const torch::Tensor& weight);
Fp8ScaledMm fp8WgradProduct(const torch::Tensor& dy, const Fp8Matrix& kept_x, int64_t in);

}  // namespace trainbench::kernels
