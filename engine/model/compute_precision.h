// The precision a forward pass computes in, from the config and where the model lives.
#pragma once

#include <torch/torch.h>

#include "kernels/compute_scope.h"
#include "trainbench/run_config.h"

namespace trainbench {

// runtime.dtype resolved for `device` (auto: trainbench/compute_dtype.h), and fp32 for a model
// held in fp64 (the reference runs of the tests, which no rounding may touch). Every command
// that runs the model (train, eval, noise-scale, the explorer, generate, samples) computes in it.
ComputePrecision computePrecision(const RunConfig& config, torch::Device device, bool fp64);

// The same for `model`'s device and parameter dtype.
template <class Model> ComputePrecision computePrecisionOf(const RunConfig& config, const Model& model) {
    const auto params = model->parameters();
    if (params.empty()) return ComputePrecision::kFp32;
    return computePrecision(config, params.front().device(), params.front().scalar_type() == torch::kFloat64);
}

}  // namespace trainbench
