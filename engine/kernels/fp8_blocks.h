// Block-scaled fp8 (E4M3) quantisation of fp32 matrices with online scales, as DeepSeek-V3's
// recipe takes the operands of a Linear's products (docs/design/fp8.md).
//
// A matrix [R, C] is cut into groups of one shape, each with its own fp32 scale computed from the
// group's largest |value| (no history, no delayed scaling):
//   kRowTiles     1 x 128: one row, 128 columns (an activation or its gradient, tiles along C)
//   kColumnTiles  128 x 1: 128 rows, one column (the same tiles re-laid out along R, for Wgrad)
//   kBlocks       128 x 128 (a weight)
// Edge groups may be partial (C = 200 gives tiles of 128 and 72). Scales are stored [R / r, C / c]
// rounded up for a group of r x c: [R, ceil(C/128)], [ceil(R/128), C] or [ceil(R/128), ceil(C/128)].
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace trainbench::kernels {

enum class Fp8Grouping { kRowTiles, kColumnTiles, kBlocks };

// kAmax: scale = amax / 448 (rounded to fp32), the group's largest value lands on 448.
// kPowerOfTwo: the smallest power of two with amax / scale <= 448; the recipe's choice where a
// tile is re-laid out, since dividing by a power of two loses no mantissa bits.
enum class Fp8ScaleRule { kAmax, kPowerOfTwo };

// E4M3's largest finite value (the fn variant: no infinities, one NaN pattern per sign).
constexpr float kE4m3Max = 448.0f;
// Elements along a tile, and along each side of a block.
constexpr int64_t kFp8Group = 128;

// A NaN or an infinity in a matrix about to be quantised: a quantised NaN would be NaN again (or
// a silent zero after a guard), so the step that made it is reported instead, by name.
class Fp8NonFiniteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Raises Fp8NonFiniteError for the value v at (row, col) of `what`, in the words every fp8
// quantiser uses.
[[noreturn]] void refuseNonFiniteFp8(float v, int64_t row, int64_t col, const std::string& what);

struct Fp8Matrix {
    torch::Tensor values;  // [R, C] at::kFloat8_e4m3fn: v / scale of the element's group, clamped to +-448
    torch::Tensor scales;  // fp32, one per group (shapes above)
    Fp8Grouping grouping = Fp8Grouping::kRowTiles;
};

// The group's extent along rows and along columns (1 x 128, 128 x 1, 128 x 128).
int64_t groupRows(Fp8Grouping grouping);
int64_t groupCols(Fp8Grouping grouping);

// The scale of a group whose largest |value| is `amax` (finite, >= 0). Never below fp32's
// smallest normal (2^-126): an all-zero group gets that scale and quantises to zeros, and a
// group of values so small that amax / 448 underflows keeps a scale it can divide by; a
// subnormal scale is also what GPU kernels that flush denormals would read as zero.
float fp8Scale(float amax, Fp8ScaleRule rule);

// fp32 to E4M3 by rounding to nearest, ties to even, saturating at +-448: ATen's cast alone does
// not saturate (470 becomes NaN). `v` must be finite.
c10::Float8_e4m3fn saturatingE4m3(float v);

// A 2-D fp32 CPU matrix (any strides) into E4M3 with one scale per group. `what` names the matrix
// in the error a NaN or an infinity raises (Fp8NonFiniteError): "non-finite value nan in <what>
// (row r, column c) before fp8 quantisation".
Fp8Matrix quantiseFp8(const torch::Tensor& matrix, Fp8Grouping grouping, Fp8ScaleRule rule, const std::string& what);

// values * scale of each element's group, fp32 [R, C] (each one rounded to fp32 once).
torch::Tensor dequantiseFp8(const Fp8Matrix& q);

// The bytes of a quantised [rows, cols] matrix: one per element and four per scale.
int64_t fp8Bytes(int64_t rows, int64_t cols, Fp8Grouping grouping);

}  // namespace trainbench::kernels
