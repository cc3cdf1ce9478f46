#include "kernels/onednn_product.h"

#include <ATen/ATen.h>

#include "kernels/vector_math.h"
#include "trainbench/compute_dtype.h"

namespace at::native {
// ATen's entry into oneDNN's matmul (aten/src/ATen/native/mkldnn/Matmul.cpp), exported by
// libtorch_cpu; its header is not installed. result = beta result + alpha mat1 mat2, all three
// of one dtype, 2-D operands contiguous or transposed.
void mkldnn_matmul(const at::Tensor& mat1, const at::Tensor& mat2, const at::Tensor& result, float beta, float alpha);
}  // namespace at::native

namespace trainbench::kernels {
namespace {

// ATen refuses oneDNN's bf16 products on x86 CPUs without AVX-512 BW, VL and DQ (nor does the
// engine take them where TRAINBENCH_CPU_ISA rules AVX-512 out).
bool cpuTakesBf16Products() {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return cpuSupports(VectorIsa::Avx512) && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
#else
    return false;
#endif
}

// A stored packed [rows, cols] matrix as the [rows, cols] operand, or as its transpose.
at::Tensor operand(const uint16_t* data, int64_t rows, int64_t cols, bool transposed) {
    auto options = at::TensorOptions().dtype(at::kBFloat16);
    auto stored = at::from_blob(const_cast<uint16_t*>(data), {rows, cols}, options);
    return transposed ? stored.t() : stored;
}

}  // namespace

bool oneDnnBf16Runs() {
    static const bool runs = cpuTakesBf16Products();
    return runs;
}

bool oneDnnBf16Fast() {
    static const bool fast = oneDnnBf16Runs() && cpuMatrixFeatures().fastBf16();
    return fast;
}

void oneDnnBf16Product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                       const uint16_t* b, uint16_t* out) {
    const auto A = operand(a, trans_a ? k : m, trans_a ? m : k, trans_a);
    const auto B = operand(b, trans_b ? n : k, trans_b ? k : n, trans_b);
    const auto C = at::from_blob(out, {m, n}, at::TensorOptions().dtype(at::kBFloat16));
    at::native::mkldnn_matmul(A, B, C, 0.0f, alpha);
}

}  // namespace trainbench::kernels
