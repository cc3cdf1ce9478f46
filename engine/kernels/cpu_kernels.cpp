#include "kernels/cpu_kernels.h"

#include "kernels/vector_math.h"

#include <ATen/autocast_mode.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace trainbench::kernels {
namespace {

std::atomic<bool>& enabledFlag() {
    static std::atomic<bool> flag{[] {
        const char* value = std::getenv("TRAINBENCH_CPU_KERNELS");
        return !(value && std::strcmp(value, "0") == 0);
    }()};
    return flag;
}

}  // namespace

bool cpuKernelsEnabled() { return enabledFlag().load(std::memory_order_relaxed); }
void setCpuKernelsEnabled(bool enabled) { enabledFlag().store(enabled); }

bool cpuKernelsTake(std::initializer_list<const torch::Tensor*> tensors) {
    if (!cpuKernelsEnabled() || at::autocast::is_autocast_enabled(at::kCPU)) return false;
    std::optional<torch::ScalarType> dtype;
    for (const torch::Tensor* t : tensors) {
        if (!t->defined()) continue;
        if (!t->device().is_cpu() || t->layout() != torch::kStrided) return false;
        const auto type = t->scalar_type();
        if (type != torch::kFloat32 && type != torch::kFloat64) return false;
        if (dtype && *dtype != type) return false;
        dtype = type;
    }
    return dtype.has_value();
}

void saveProductPrecision(torch::autograd::AutogradContext* ctx) {
    ctx->saved_data["product_precision"] = static_cast<int64_t>(productPrecision());
}

ProductPrecision savedProductPrecision(torch::autograd::AutogradContext* ctx) {
    return static_cast<ProductPrecision>(ctx->saved_data["product_precision"].toInt());
}

namespace {

// TRAINBENCH_CPU_ISA: the widest instruction set the engine's own choices may take on this CPU,
// so that a machine with AVX-512 or AMX runs the paths an AVX2-only CPU runs (with ATen's,
// oneDNN's and MKL's own variables: docs/DEVELOPMENT.md, "CPU paths"). Unset: the CPU's own.
VectorIsa isaCeiling() {
    static const VectorIsa ceiling = [] {
        const char* value = std::getenv("TRAINBENCH_CPU_ISA");
        if (!value || !*value) return VectorIsa::Avx512;
        const std::string name = value;
        if (name == "avx2" || name == "AVX2") return VectorIsa::Avx2;
        if (name == "baseline" || name == "default") return VectorIsa::Baseline;
        return VectorIsa::Avx512;
    }();
    return ceiling;
}

}  // namespace

bool cpuSupports(VectorIsa isa) {
    if (static_cast<int>(isa) > static_cast<int>(isaCeiling())) return false;
#if defined(__x86_64__) && defined(__GNUC__)
    switch (isa) {
        case VectorIsa::Avx512: return __builtin_cpu_supports("avx512f");
        case VectorIsa::Avx2: return __builtin_cpu_supports("avx2");
        default: return true;
    }
#else
    return isa == VectorIsa::Baseline;
#endif
}

namespace {
std::atomic<int>& chosenIsa() {
    static std::atomic<int> isa{-1};
    return isa;
}
VectorIsa widestIsa() {
    static const VectorIsa widest = cpuSupports(VectorIsa::Avx512) ? VectorIsa::Avx512
                                    : cpuSupports(VectorIsa::Avx2) ? VectorIsa::Avx2
                                                                   : VectorIsa::Baseline;
    return widest;
}
}  // namespace

VectorIsa vectorIsa() {
    const int chosen = chosenIsa().load(std::memory_order_relaxed);
    return chosen < 0 ? widestIsa() : static_cast<VectorIsa>(chosen);
}

void setVectorIsa(std::optional<VectorIsa> isa) {
    if (isa && !cpuSupports(*isa)) throw std::invalid_argument("this CPU lacks the instruction set asked for");
    chosenIsa().store(isa ? static_cast<int>(*isa) : -1);
}

}  // namespace trainbench::kernels
