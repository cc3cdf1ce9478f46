// The fp8 Linear on an SM90 GPU's tensor cores against the CPU emulation, on the same operands:
// the comparison test_fp8_cuda makes where a GPU is present and bench/fp8_cuda_check.cpp makes
// on the GPU machine (which has no Qt). Qt-free; torch and the engine's kernels only.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/fp8_linear.h"
#include "kernels/fp8_linear_cuda.h"

namespace trainbench {

inline double relativeFrobenius(const torch::Tensor& got, const torch::Tensor& want) {
    const auto w = want.to(torch::kCPU, torch::kFloat64);
    return (got.to(torch::kCPU, torch::kFloat64) - w).norm().item<double>() / std::max(w.norm().item<double>(), 1e-300);
}

// One case: x of `x_sizes` (fp32, or bf16 on the GPU with the same values on the CPU), W [out, in].
struct Fp8CudaCase {
    std::string name;
    std::vector<int64_t> x_sizes;
    int64_t out = 0;
    bool bf16 = false;
};

inline std::vector<Fp8CudaCase> fp8CudaCases() {
    return {{"x [2, 65, 200] fp32, W [150, 200]", {2, 65, 200}, 150, false},
            {"x [4, 128, 512] fp32, W [384, 512]", {4, 128, 512}, 384, false},
            {"x [4, 128, 512] bf16, W [384, 512]", {4, 128, 512}, 384, true}};
}

// The relative Frobenius distances of y, dx and dW, and the bounds they are held to: the same
// quantised operands on both sides (the quantisers agree bit for bit), so the products differ
// by accumulation only. cuBLASLt promotes the fp8 partial sums (about 14 significant bits,
// DeepSeek-V3 section 3.3) to fp32 along K, a few 1e-5 relative: bound 1e-3. bf16 outputs add
// their rounding (2^-9 at most, about 1e-3 in Frobenius): bound 5e-3 for y and dx; dW is fp32.
struct Fp8CudaComparison {
    double y = 0, dx = 0, dw = 0;
    double bound = 0, dw_bound = 1e-3;
    bool dtypes_right = false;  // y and dx in x's dtype, dW fp32
    bool passes() const { return dtypes_right && y < bound && dx < bound && dw < dw_bound; }
};

// Runs one case on cuda:0 (which must be an SM90 GPU: fp8CudaUnsupportedReason(0) empty).
inline Fp8CudaComparison compareFp8CudaWithEmulation(const Fp8CudaCase& c) {
    const int64_t in = c.x_sizes.back();
    torch::manual_seed(5);
    auto x_values = torch::randn(c.x_sizes);
    if (c.bf16) x_values = x_values.to(torch::kBFloat16).to(torch::kFloat32);  // the same data on both sides
    const auto w_values = torch::randn({c.out, in}) * 0.05;
    auto dy_sizes = c.x_sizes;
    dy_sizes.back() = c.out;
    auto dy = torch::randn(dy_sizes);
    if (c.bf16) dy = dy.to(torch::kBFloat16).to(torch::kFloat32);

    const auto x_cpu = x_values.clone().requires_grad_(true);
    const auto w_cpu = w_values.clone().requires_grad_(true);
    const auto y_cpu = kernels::fp8Linear(x_cpu, w_cpu);
    y_cpu.backward(dy);

    const auto dtype = c.bf16 ? torch::kBFloat16 : torch::kFloat32;
    const auto x_gpu = x_values.to(torch::kCUDA, dtype).requires_grad_(true);
    const auto w_gpu = w_values.to(torch::kCUDA).requires_grad_(true);
    const auto y_gpu = kernels::fp8LinearCuda(x_gpu, w_gpu);
    y_gpu.backward(dy.to(torch::kCUDA, dtype));

    Fp8CudaComparison r;
    r.dtypes_right = y_gpu.scalar_type() == dtype && x_gpu.grad().scalar_type() == dtype &&
                     w_gpu.grad().scalar_type() == torch::kFloat32;
    r.bound = c.bf16 ? 5e-3 : 1e-3;
    r.y = relativeFrobenius(y_gpu, y_cpu);
    r.dx = relativeFrobenius(x_gpu.grad(), x_cpu.grad());
    r.dw = relativeFrobenius(w_gpu.grad(), w_cpu.grad());
    return r;
}

}  // namespace trainbench
