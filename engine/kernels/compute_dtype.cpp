// runtime.dtype "auto": the device, the CPU's matrix instructions and the model's width decide.
#include "trainbench/compute_dtype.h"

#include "kernels/vector_math.h"

namespace trainbench {

CpuMatrixFeatures cpuMatrixFeatures() {
    static const CpuMatrixFeatures features = [] {
        CpuMatrixFeatures f;
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        // Neither where TRAINBENCH_CPU_ISA rules AVX-512 out (kernels/vector_math.h).
        const bool wide = kernels::cpuSupports(kernels::VectorIsa::Avx512);
        f.avx512_bf16 = wide && __builtin_cpu_supports("avx512bf16") != 0;
        f.amx_bf16 = wide && __builtin_cpu_supports("amx-bf16") != 0;
#endif
        return f;
    }();
    return features;
}

ComputeDtype resolveComputeDtype(const RunConfig& config, bool on_cuda, const CpuMatrixFeatures& cpu) {
    const ComputeDtype asked = computeDtype(config.runtime);
    if (asked != ComputeDtype::Auto) return asked;
    if (on_cuda) return ComputeDtype::Bf16;
    return cpu.fastBf16() && config.model.dim >= kAutoBf16MinDimOnCpu ? ComputeDtype::Bf16 : ComputeDtype::Fp32;
}

std::string explainComputeDtype(const RunConfig& config, bool on_cuda, const CpuMatrixFeatures& cpu) {
    const char* chosen = choiceName(resolveComputeDtype(config, on_cuda, cpu));
    std::string why;
    if (computeDtype(config.runtime) != ComputeDtype::Auto) why = "as runtime.dtype says";
    else if (on_cuda) why = "on a GPU";
    else if (!cpu.fastBf16()) why = "this CPU has neither AVX-512 BF16 nor AMX";
    else if (config.model.dim < kAutoBf16MinDimOnCpu)
        why = "model.dim " + std::to_string(config.model.dim) + " < " + std::to_string(kAutoBf16MinDimOnCpu) +
              ": too narrow for bf16 to pay on this CPU";
    else why = std::string("this CPU has ") + (cpu.amx_bf16 ? "AMX" : "AVX-512 BF16");
    return std::string("computing in ") + chosen + " (runtime.dtype " + config.runtime.dtype + ": " + why + ")";
}

}  // namespace trainbench
