// Element functions for the kernels' loops, written so that the compiler vectorises them (no
// library call in the loop body) and every lane computes what a scalar would: the results do
// not depend on the vector width a CPU offers.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>

namespace trainbench::kernels {

// The instruction sets the loops are compiled for, each loop once per set; the widest the CPU
// has is used. The kernels' sources are compiled with -ffp-contract=off: no variant fuses a
// multiply-add another does not, so all give the same bits and a test can compare them.
enum class VectorIsa { Baseline, Avx2, Avx512 };
// Whether this CPU has `isa` and TRAINBENCH_CPU_ISA (avx2, baseline) does not rule it out: the
// engine's own paths (these loops, oneDNN's bf16 products, "auto"'s bf16) then take what an
// older CPU would.
bool cpuSupports(VectorIsa isa);
VectorIsa vectorIsa();
// A test's choice (one the CPU supports), or nullopt for the widest again.
void setVectorIsa(std::optional<VectorIsa> isa);

#if defined(__x86_64__) && defined(__GNUC__)
// `name params` calling `body args` in the variant vectorIsa() names.
#define TRAINBENCH_VECTOR_VARIANTS(name, body, params, args)                         \
    __attribute__((target("avx512f"))) void name##Avx512 params { body args; }       \
    __attribute__((target("avx2"))) void name##Avx2 params { body args; }            \
    void name##Baseline params { body args; }                                        \
    void name params {                                                               \
        switch (::trainbench::kernels::vectorIsa()) {                                \
            case ::trainbench::kernels::VectorIsa::Avx512: return name##Avx512 args; \
            case ::trainbench::kernels::VectorIsa::Avx2: return name##Avx2 args;     \
            default: return name##Baseline args;                                     \
        }                                                                            \
    }
#else
#define TRAINBENCH_VECTOR_VARIANTS(name, body, params, args) \
    void name params { body args; }
#endif

// e^x in fp32 to about 1 ulp: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-7 polynomial
// (Cephes' minimax coefficients), 2^n built in the exponent bits. Clamped to [-87.3, 88]: e^x
// is then at least 1.2e-38 and at most 1.7e38 (a sigmoid needs no more); NaN stays NaN.
inline float expApprox(float x) {
    x = x < -87.3f ? -87.3f : x;
    x = x > 88.0f ? 88.0f : x;
    // Round to nearest by the 1.5 * 2^23 shift, which needs no SSE4.1 rounding instruction.
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    return p * std::bit_cast<float>(bits);
}
inline double expApprox(double x) { return std::exp(x); }  // fp64 is the tests' reference: exact

// sum_i a_i b_i in sixteen running partial sums added in a fixed order (lanes of a vector,
// whatever its width), then the tail: the same bits from every variant.
template <typename T>
inline T sumOfProducts(const T* a, const T* b, int64_t n) {
    constexpr int64_t kLanes = 16;
    T lanes[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += a[j + l] * b[j + l];
    T sum = 0;
    for (int64_t l = 0; l < kLanes; ++l) sum += lanes[l];
    for (; j < n; ++j) sum += a[j] * b[j];
    return sum;
}

template <typename T>
inline T sigmoid(T x) {
    return T(1) / (T(1) + expApprox(-x));
}

}  // namespace trainbench::kernels
