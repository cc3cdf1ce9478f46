// AutocastScope: bf16 autocast for the forward pass of one micro-batch on the rank's thread.
#pragma once

#include <ATen/autocast_mode.h>

namespace trainbench {

// Weights, gradients, gradient buckets and optimizer state stay fp32 (the master copy); inside
// the scope matrix products run in bf16 and the ops autocast keeps in fp32 (softmax, losses,
// norms) stay there. Autocast state is per thread, so each rank thread holds its own scope.
// Leaving the outermost scope drops autocast's cache of bf16 weight copies, as torch.autocast
// does on exit.
class AutocastScope {
public:
    AutocastScope(c10::DeviceType device, bool enabled) : device_(device), enabled_(enabled) {
        if (!enabled_) return;
        previous_enabled_ = at::autocast::is_autocast_enabled(device_);
        previous_dtype_ = at::autocast::get_autocast_dtype(device_);
        at::autocast::set_autocast_enabled(device_, true);
        at::autocast::set_autocast_dtype(device_, at::kBFloat16);
        at::autocast::increment_nesting();
    }
    ~AutocastScope() {
        if (!enabled_) return;
        if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
        at::autocast::set_autocast_enabled(device_, previous_enabled_);
        at::autocast::set_autocast_dtype(device_, previous_dtype_);
    }
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

private:
    c10::DeviceType device_;
    bool enabled_;
    bool previous_enabled_ = false;
    at::ScalarType previous_dtype_ = at::kBFloat16;
};

}  // namespace trainbench
