#include "kernels/adamw_bf16_moments.h"

#include <bit>
#include <cmath>

#include "kernels/parallel.h"
#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

inline float widened(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

// Round to nearest, ties to even (kernels/bf16_rounding.cpp's rule): adding 0x7fff plus the kept
// part's lowest bit carries into the kept half exactly when the cut half is above one half of
// its last place, or equal to it with that place odd. NaN stays NaN (made quiet).
inline uint16_t rounded(float x) {
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    const uint32_t kept = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    return nan ? uint16_t((bits | 0x00400000u) >> 16) : uint16_t(kept);
}

// The element loop; the two forms (gradient divided or not) are separate loops so that the
// common one does not store the gradient back.
template <bool kDivide>
inline void updateRange(float* param, float* grad, uint16_t* exp_avg, uint16_t* exp_avg_sq, int64_t n,
                        const AdamWStepScalars& s) {
    const float beta1 = s.beta1, beta2 = s.beta2, c1 = s.one_minus_beta1, c2 = s.one_minus_beta2;
    const float step_size = s.step_size, bias2_sqrt = s.bias2_sqrt, decay = s.decay, eps = s.eps;
    const float divisor = s.grad_divisor;
    for (int64_t i = 0; i < n; ++i) {
        float g = grad[i];
        if constexpr (kDivide) {
            g = g / divisor;
            grad[i] = g;
        }
        const float m = beta1 * widened(exp_avg[i]) + c1 * g;
        const float v = beta2 * widened(exp_avg_sq[i]) + c2 * (g * g);
        const float denom = std::sqrt(v) / bias2_sqrt + eps;
        param[i] = decay * param[i] - step_size * (m / denom);
        exp_avg[i] = rounded(m);
        exp_avg_sq[i] = rounded(v);
    }
}

inline void updateImpl(float* param, float* grad, uint16_t* exp_avg, uint16_t* exp_avg_sq, int64_t n,
                       const AdamWStepScalars* s) {
    if (s->grad_divisor == 1.0f) updateRange<false>(param, grad, exp_avg, exp_avg_sq, n, *s);
    else updateRange<true>(param, grad, exp_avg, exp_avg_sq, n, *s);
}

TRAINBENCH_VECTOR_VARIANTS(update, updateImpl,
                           (float* param, float* grad, uint16_t* exp_avg, uint16_t* exp_avg_sq, int64_t n,
                            const AdamWStepScalars* s),
                           (param, grad, exp_avg, exp_avg_sq, n, s))

}  // namespace

void adamWBf16Moments(float* param, float* grad, uint16_t* exp_avg, uint16_t* exp_avg_sq, int64_t n,
                      const AdamWStepScalars& s) {
    // Chunks of 64 Ki elements (640 KiB of traffic): small loops stay on the calling thread.
    parallelFor(0, n, int64_t(1) << 16, [&](int64_t first, int64_t last) {
        update(param + first, grad + first, exp_avg + first, exp_avg_sq + first, last - first, &s);
    });
}

}  // namespace trainbench::kernels
