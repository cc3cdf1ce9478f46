// Which tensors the written-out CPU kernels take, and the switch that turns them off.
//
// The kernels (linear, gated MLP, RMSNorm) replace chains of ATen operators by one autograd
// node each whose forward and backward run BLAS and plain loops on the tensors' memory: on a
// CPU a small model's step costs its operator dispatches more than its arithmetic. They take
// fp32 and fp64 on the CPU outside autocast (bf16 on the CPU is theirs too: fp32 tensors with
// bf16 products, product_precision.h); everything else (CUDA, autocast) keeps the composed
// ATen form, which computes the same function.
#pragma once

#include <algorithm>
#include <initializer_list>

#include <torch/torch.h>

#include "kernels/product_precision.h"

namespace trainbench::kernels {

// On by default; TRAINBENCH_CPU_KERNELS=0 in the environment turns them off for the process
// (an A/B of the same binary), setCpuKernelsEnabled for a test comparing both forms.
bool cpuKernelsEnabled();
void setCpuKernelsEnabled(bool enabled);

// All defined tensors on the CPU, strided, of one dtype, fp32 or fp64, and no CPU autocast.
bool cpuKernelsTake(std::initializer_list<const torch::Tensor*> tensors);

// A node whose forward runs products keeps the precision it ran under (product_precision.h) for
// its backward, which runs on whatever thread autograd picks, as autocast's graph would.
void saveProductPrecision(torch::autograd::AutogradContext* ctx);
ProductPrecision savedProductPrecision(torch::autograd::AutogradContext* ctx);

// The grain of a parallelFor (parallel.h) over items of `work_per_item` elements (or multiply-adds):
// tasks of about `work_per_task`, at least one item, so that small loops stay on the calling
// thread rather than waking the others.
inline int64_t itemsPerTask(int64_t work_per_item, int64_t work_per_task = 32768) {
    return std::max<int64_t>(1, work_per_task / std::max<int64_t>(work_per_item, 1));
}

}  // namespace trainbench::kernels
