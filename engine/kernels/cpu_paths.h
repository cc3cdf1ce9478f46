// Which CPU code paths this process takes: the instruction sets ATen, oneDNN, MKL and the
// engine's own loops run on, each as the CPU offers it or as an environment variable caps it.
#pragma once

#include <string>

namespace trainbench::kernels {

// One line, e.g. "ATen AVX2 (ATEN_CPU_CAPABILITY=avx2); oneDNN (ONEDNN_MAX_CPU_ISA=AVX2); MKL
// (the CPU's); engine loops avx2 (TRAINBENCH_CPU_ISA=avx2); bf16 products fp32 GEMM on rounded
// operands". The numerical suites print it, so that a result says which path it was measured on.
std::string cpuPathsInUse();

}  // namespace trainbench::kernels
