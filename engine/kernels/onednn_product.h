// One bf16 matrix product through oneDNN (what ATen's bf16 products on the CPU call), on raw
// memory: on CPUs with AVX-512 BF16 or AMX about twice MKL's fp32 GEMM on products of a few
// million multiply-adds and more (docs/BENCHMARKS.md); below that its fixed cost per call loses.
#pragma once

#include <cstdint>

namespace trainbench::kernels {

// Whether ATen lets oneDNN's bf16 products run on this CPU (AVX-512 BW, VL and DQ), and whether
// they run in hardware there (AVX-512 BF16 or AMX) rather than emulated.
bool oneDnnBf16Runs();
bool oneDnnBf16Fast();

// out [m, n] = alpha op(A) op(B) in bf16 (fp32 accumulation inside, the result rounded to
// bf16), A stored packed [m, k] (or [k, m] when trans_a), B [k, n] (or [n, k]), all bf16 bit
// patterns, out packed.
void oneDnnBf16Product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                       const uint16_t* b, uint16_t* out);

}  // namespace trainbench::kernels
