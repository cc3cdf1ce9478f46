// AdamW over the model's parameters: which take weight decay, the optimizer the replicated
// layouts step, and its state under the parameter names (what checkpoints hold).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/safetensors.h"
#include "model/transformer.h"
#include "trainbench/run_config.h"

namespace trainbench {

// The parameters' reference names, in registration order (model->parameters()'s order).
std::vector<std::string> parameterNames(Transformer& model);

// Per parameter (registration order): whether AdamW decays it. Matrices do; norms and biases
// (anything of one dimension, or named "norm") do not.
std::vector<bool> parameterDecays(Transformer& model);

// AdamW with decoupled weight decay on the decayed parameters only, two groups (decayed, not).
std::unique_ptr<torch::optim::AdamW> makeAdamW(Transformer& model, const TrainConfig& train);

// An AdamW's state under the parameter names: `<name>.exp_avg`, `<name>.exp_avg_sq` (the
// parameter's shape, in the moments' storage dtype: fp32, or bf16 under runtime.optimizer_dtype
// bf16) and `<name>.step` (an int64 scalar), for the parameters it has stepped. Sharded stages
// gather the same names (ShardedAdamW::gatherState).
NamedTensors adamWState(Transformer& model, torch::optim::AdamW& optimizer);

// Restores the state adamWState wrote (any layout's, same model config, either storage dtype)
// into `optimizer`, the moments converted to momentDtype(`moments`, the parameter's dtype):
// bf16 to fp32 is exact, fp32 to bf16 rounds to nearest even as a bf16 step's moments are.
void restoreOptimizer(Transformer& model, torch::optim::AdamW& optimizer, const NamedTensors& saved,
                      OptimizerDtype moments = OptimizerDtype::Fp32);

}  // namespace trainbench
