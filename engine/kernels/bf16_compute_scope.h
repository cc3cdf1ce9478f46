// Bf16ComputeScope: bf16 compute for the forward pass of one micro-batch on the rank's thread.
#pragma once

#include <ATen/autocast_mode.h>

#include <optional>

#include "kernels/cpu_kernels.h"
#include "kernels/product_precision.h"

namespace trainbench {

// Weights, gradients, gradient buckets and optimizer state stay fp32 (the master copy) either
// way. On a CPU with the kernels on, the kernels' products run with bf16 operands and fp32
// accumulation and everything else stays fp32 (kernels/product_precision.h); each node keeps
// that for its backward. Elsewhere (CUDA, or the kernels off) ATen's autocast runs the matrix
// products in bf16 and keeps the ops it lists (softmax, losses, norms) in fp32; leaving the
// outermost scope drops its cache of bf16 weight copies, as torch.autocast does on exit.
// Both settings are per thread, so each rank thread holds its own scope.
class Bf16ComputeScope {
public:
    Bf16ComputeScope(c10::DeviceType device, bool enabled) : device_(device) {
        if (!enabled) return;
        if (device_ == c10::kCPU && kernels::cpuKernelsEnabled()) {
            products_.emplace(kernels::ProductPrecision::kBf16);
            return;
        }
        autocast_ = true;
        previous_enabled_ = at::autocast::is_autocast_enabled(device_);
        previous_dtype_ = at::autocast::get_autocast_dtype(device_);
        at::autocast::set_autocast_enabled(device_, true);
        at::autocast::set_autocast_dtype(device_, at::kBFloat16);
        at::autocast::increment_nesting();
    }
    ~Bf16ComputeScope() {
        if (!autocast_) return;
        if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
        at::autocast::set_autocast_enabled(device_, previous_enabled_);
        at::autocast::set_autocast_dtype(device_, previous_dtype_);
    }
    Bf16ComputeScope(const Bf16ComputeScope&) = delete;
    Bf16ComputeScope& operator=(const Bf16ComputeScope&) = delete;

    // Whether this thread computes in bf16 on `device` now (a recomputed forward runs as the
    // original did).
    static bool active(c10::DeviceType device) {
        return at::autocast::is_autocast_enabled(device) ||
               (device == c10::kCPU && kernels::productPrecision() == kernels::ProductPrecision::kBf16);
    }

private:
    c10::DeviceType device_;
    bool autocast_ = false;
    std::optional<kernels::ProductPrecisionScope> products_;
    bool previous_enabled_ = false;
    at::ScalarType previous_dtype_ = at::kBFloat16;
};

}  // namespace trainbench
