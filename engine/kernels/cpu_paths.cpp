#include "kernels/cpu_paths.h"

#include <ATen/Version.h>

#include <cstdlib>

#include "kernels/onednn_product.h"
#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

// " (NAME=value)" where the variable is set, else " (the CPU's)".
std::string setBy(const char* name) {
    const char* value = std::getenv(name);
    if (!value || !*value) return " (the CPU's)";
    return std::string(" (") + name + "=" + value + ")";
}

const char* isaName(VectorIsa isa) {
    switch (isa) {
        case VectorIsa::Avx512: return "avx512";
        case VectorIsa::Avx2: return "avx2";
        default: return "baseline";
    }
}

}  // namespace

std::string cpuPathsInUse() {
    std::string line = "ATen " + at::get_cpu_capability() + setBy("ATEN_CPU_CAPABILITY");
    line += "; oneDNN" + setBy("ONEDNN_MAX_CPU_ISA");
    line += "; MKL" + setBy("MKL_ENABLE_INSTRUCTIONS");
    line += std::string("; engine loops ") + isaName(vectorIsa()) + setBy("TRAINBENCH_CPU_ISA");
    line += std::string("; bf16 products ") +
            (oneDnnBf16Runs() ? (oneDnnBf16Fast() ? "oneDNN (AVX-512 BF16 or AMX)" : "oneDNN (AVX-512)")
                              : "fp32 GEMM on rounded operands");
    return line;
}

}  // namespace trainbench::kernels
