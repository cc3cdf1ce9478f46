// The CPU AdamW update of fp32 weights whose two moments are stored in bf16 (DeepSeek-V3's
// optimizer state): one pass, the arithmetic in fp32, the new moments rounded back.
#pragma once

#include <cstdint>

namespace trainbench::kernels {

// One step's scalars, the same for every element of a call. The caller derives them from the
// hyper-parameters and the step count t (in fp64, then rounded once to fp32):
//   step_size = lr / (1 - beta1^t), bias2_sqrt = sqrt(1 - beta2^t), decay = 1 - lr * weight_decay.
struct AdamWStepScalars {
    float beta1, beta2, one_minus_beta1, one_minus_beta2;
    float step_size, bias2_sqrt, decay, eps;
    float grad_divisor;  // 1: the gradients as they are
};

// For each of the n elements, with m and v the bf16 moments widened (exactly) to fp32:
//   g = grad / grad_divisor (stored back into grad when the divisor is not 1, as ATen's fused
//   kernel does), p = decay * p, m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2,
//   p = p - step_size * m / (sqrt(v) / bias2_sqrt + eps),
// then the weight stored in fp32 and m, v rounded to bf16 (nearest, ties to even): the update
// uses the unrounded new moments, the state keeps the rounded ones. Elementwise, so any split
// of the elements (threads, buckets, shards) gives the same bits; one variant per instruction
// set (vector_math.h), all with the same bits. Split over the intra-op threads.
void adamWBf16Moments(float* param, float* grad, uint16_t* exp_avg, uint16_t* exp_avg_sq, int64_t n,
                      const AdamWStepScalars& s);

}  // namespace trainbench::kernels
