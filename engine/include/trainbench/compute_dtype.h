// What `runtime.dtype` means on this machine: "auto" resolved to fp32 or bf16 by the device,
// the CPU's matrix instructions and the model's width.
#pragma once

#include <string>

#include "trainbench/run_config.h"

namespace trainbench {

// The CPU instructions that make bf16 matrix products fast (oneDNN runs bf16 products on them).
struct CpuMatrixFeatures {
    bool avx512_bf16 = false;  // AVX-512 BF16: bf16 dot products in vector registers
    bool amx_bf16 = false;     // AMX: bf16 tile multiplies
    bool fastBf16() const { return avx512_bf16 || amx_bf16; }
};

// This machine's, read once from CPUID.
CpuMatrixFeatures cpuMatrixFeatures();

// The narrowest model width at which "auto" trains in bf16 on a CPU with fastBf16(): below it
// rounding the products' operands costs more than the faster products save (docs/BENCHMARKS.md,
// "bf16 on the CPU through the kernels": tiny at dim 64 runs at 0.89-0.94x in bf16, dim 256 at
// 1.12x and small at dim 512 at 1.39x).
constexpr int64_t kAutoBf16MinDimOnCpu = 256;

// The precision a rank computes in (never Auto). Explicit values stand; "auto" is bf16 on a
// CUDA device, bf16 on a CPU with fast bf16 products for models at least kAutoBf16MinDimOnCpu
// wide, fp32 otherwise. `on_cuda`: the rank's device is a GPU.
ComputeDtype resolveComputeDtype(const RunConfig& config, bool on_cuda,
                                const CpuMatrixFeatures& cpu = cpuMatrixFeatures());

// One sentence for the run's events: what "auto" chose and why.
std::string explainComputeDtype(const RunConfig& config, bool on_cuda,
                                const CpuMatrixFeatures& cpu = cpuMatrixFeatures());

}  // namespace trainbench

// Floor: kernels/ (engine/README.md)
