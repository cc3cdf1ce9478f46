// fp32 to bf16 by rounding to nearest, ties to even (what c10::BFloat16 and the CPUs' bf16
// conversion instructions do), for the operands of the bf16 products (product_precision.h).
#pragma once

#include <cstdint>

namespace trainbench::kernels {

// A [rows, cols] matrix stored with row stride `ld`, into a packed [rows, cols] one: as bf16
// bit patterns (row stride packed_ld, by default cols), or as the same values held in fp32
// (exact: bf16 is fp32 cut to 16 bits).
void roundToBf16(const float* source, int64_t rows, int64_t cols, int64_t ld, uint16_t* packed, int64_t packed_ld = 0);
void roundToBf16Values(const float* source, int64_t rows, int64_t cols, int64_t ld, float* packed);

// c = widen(bf16) + beta c over a [rows, cols] matrix, bf16 with row stride ld, c with ldc; beta 0
// ignores what c held, NaN included.
void widenBf16(const uint16_t* bf16, int64_t rows, int64_t cols, int64_t ld, float beta, float* c, int64_t ldc);

}  // namespace trainbench::kernels
