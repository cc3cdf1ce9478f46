#include "kernels/bf16_rounding.h"

#include <bit>

#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

// Adding 0x7fff plus the kept part's lowest bit carries into the kept half exactly when the cut
// half is above one half of its last place, or equal to it with that place odd. A NaN keeps its
// sign and top bits, made quiet so that the cut cannot leave an infinity.
inline uint32_t roundedBits(float x) {
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    return nan ? ((bits | 0x00400000u) & 0xffff0000u) : rounded;
}

// A rounded value as the packed element: its bf16 bit pattern, or the fp32 value it stands for.
inline uint16_t element(uint32_t rounded, uint16_t*) { return uint16_t(rounded >> 16); }
inline float element(uint32_t rounded, float*) { return std::bit_cast<float>(rounded); }

// Rows of `source` into `packed` (row stride packed_ld).
template <typename Out>
inline void roundRows(const float* source, int64_t rows, int64_t cols, int64_t ld, Out* packed, int64_t packed_ld) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* in = source + r * ld;
        Out* out = packed + r * packed_ld;
        for (int64_t c = 0; c < cols; ++c) out[c] = element(roundedBits(in[c]), out);
    }
}

inline void widenRows(const uint16_t* bf16, int64_t rows, int64_t cols, int64_t ld, float beta, float* c,
                      int64_t ldc) {
    for (int64_t r = 0; r < rows; ++r) {
        const uint16_t* in = bf16 + r * ld;
        float* out = c + r * ldc;
        if (beta == 0.0f)
            for (int64_t j = 0; j < cols; ++j) out[j] = std::bit_cast<float>(uint32_t(in[j]) << 16);
        else
            for (int64_t j = 0; j < cols; ++j) out[j] = std::bit_cast<float>(uint32_t(in[j]) << 16) + beta * out[j];
    }
}

TRAINBENCH_VECTOR_VARIANTS(widen, widenRows,
                           (const uint16_t* bf16, int64_t rows, int64_t cols, int64_t ld, float beta, float* c,
                            int64_t ldc),
                           (bf16, rows, cols, ld, beta, c, ldc))
TRAINBENCH_VECTOR_VARIANTS(roundBits, roundRows,
                           (const float* source, int64_t rows, int64_t cols, int64_t ld, uint16_t* packed,
                            int64_t packed_ld),
                           (source, rows, cols, ld, packed, packed_ld))
TRAINBENCH_VECTOR_VARIANTS(roundValues, roundRows,
                           (const float* source, int64_t rows, int64_t cols, int64_t ld, float* packed,
                            int64_t packed_ld),
                           (source, rows, cols, ld, packed, packed_ld))

}  // namespace

void roundToBf16(const float* source, int64_t rows, int64_t cols, int64_t ld, uint16_t* packed, int64_t packed_ld) {
    roundBits(source, rows, cols, ld, packed, packed_ld > 0 ? packed_ld : cols);
}

void roundToBf16Values(const float* source, int64_t rows, int64_t cols, int64_t ld, float* packed) {
    roundValues(source, rows, cols, ld, packed, cols);
}

void widenBf16(const uint16_t* bf16, int64_t rows, int64_t cols, int64_t ld, float beta, float* c, int64_t ldc) {
    widen(bf16, rows, cols, ld, beta, c, ldc);
}

}  // namespace trainbench::kernels
