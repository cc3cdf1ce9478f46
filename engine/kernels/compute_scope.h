// ComputeScope: the precision a rank's forward passes compute in (runtime.dtype), on its thread.
#pragma once

#include <ATen/autocast_mode.h>

#include <optional>
#include <string>

#include "kernels/cpu_kernels.h"
#include "kernels/product_precision.h"
#include "trainbench/config_choices.h"

namespace trainbench {

enum class ComputePrecision { kFp32, kBf16, kFp8 };

// Weights, gradients, gradient buckets and optimizer state stay fp32 (the master copy) in every
// precision. On a CPU, bf16 with the kernels on runs the kernels' products with bf16 operands and
// fp32 accumulation, everything else fp32 (kernels/product_precision.h); fp8 runs the
// projections and gated MLPs through the emulated fp8 recipe and everything else in fp32 (with
// the kernels on or off: the fp8 nodes are their own). Elsewhere (CUDA, or the kernels off) bf16
// is ATen's autocast: matrix products in bf16, the ops it lists (softmax, losses, norms) in fp32;
// leaving the outermost scope drops its cache of bf16 weight copies, as torch.autocast does on
// exit. fp8 on CUDA is autocast's bf16 for everything but the fp8 products. Each node keeps its
// precision for its backward. The settings are per thread: each rank thread holds its own scope.
class ComputeScope {
public:
    ComputeScope(c10::DeviceType device, ComputePrecision precision) : device_(device) {
        if (precision == ComputePrecision::kFp32) return;
        const bool cpu = device_ == c10::kCPU;
        if (precision == ComputePrecision::kFp8) products_.emplace(kernels::ProductPrecision::kFp8);
        if (precision == ComputePrecision::kBf16 && cpu && kernels::cpuKernelsEnabled()) {
            products_.emplace(kernels::ProductPrecision::kBf16);
            return;
        }
        if (precision == ComputePrecision::kFp8 && cpu) return;
        autocast_ = true;
        previous_enabled_ = at::autocast::is_autocast_enabled(device_);
        previous_dtype_ = at::autocast::get_autocast_dtype(device_);
        at::autocast::set_autocast_enabled(device_, true);
        at::autocast::set_autocast_dtype(device_, at::kBFloat16);
        at::autocast::increment_nesting();
    }
    ~ComputeScope() {
        if (!autocast_) return;
        if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
        at::autocast::set_autocast_enabled(device_, previous_enabled_);
        at::autocast::set_autocast_dtype(device_, previous_dtype_);
    }
    ComputeScope(const ComputeScope&) = delete;
    ComputeScope& operator=(const ComputeScope&) = delete;

    // The precision this thread computes in now on `device` (a recomputed forward runs as the
    // original did).
    static ComputePrecision active(c10::DeviceType device) {
        if (kernels::productPrecision() == kernels::ProductPrecision::kFp8) return ComputePrecision::kFp8;
        if (at::autocast::is_autocast_enabled(device) ||
            (device == c10::kCPU && kernels::productPrecision() == kernels::ProductPrecision::kBf16))
            return ComputePrecision::kBf16;
        return ComputePrecision::kFp32;
    }

private:
    c10::DeviceType device_;
    bool autocast_ = false;
    std::optional<kernels::ProductPrecisionScope> products_;
    bool previous_enabled_ = false;
    at::ScalarType previous_dtype_ = at::kBFloat16;
};

// runtime.dtype resolved (fp32, bf16 or fp8: trainbench/compute_dtype.h) as a precision.
inline ComputePrecision asComputePrecision(ComputeDtype dtype) {
    switch (dtype) {
        case ComputeDtype::Bf16: return ComputePrecision::kBf16;
        case ComputeDtype::Fp8: return ComputePrecision::kFp8;
        case ComputeDtype::Fp32:
        case ComputeDtype::Auto: break;  // resolved before it gets here
    }
    return ComputePrecision::kFp32;
}

}  // namespace trainbench
