#include "kernels/fp8_blocks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"

namespace trainbench::kernels {
namespace {

constexpr float kSmallestNormal = std::numeric_limits<float>::min();  // 2^-126

int64_t groupsAlong(int64_t size, int64_t extent) { return (size + extent - 1) / extent; }

// The 256 E4M3 bit patterns as fp32 (exact: 4 significant bits), so that dequantising is a lookup.
const std::array<float, 256>& e4m3Values() {
    static const std::array<float, 256> table = [] {
        std::array<float, 256> t{};
        for (int bits = 0; bits < 256; ++bits)
            t[bits] = float(c10::Float8_e4m3fn(static_cast<uint8_t>(bits), c10::Float8_e4m3fn::from_bits()));
        return t;
    }();
    return table;
}

}  // namespace

void refuseNonFiniteFp8(float v, int64_t row, int64_t col, const std::string& what) {
    std::ostringstream message;
    message << "non-finite value "
            << (std::isnan(v) ? "nan"
                : v > 0       ? "inf"
                              : "-inf")
            << " in " << what << " (row " << row << ", column " << col << ") before fp8 quantisation";
    throw Fp8NonFiniteError(message.str());
}

int64_t groupRows(Fp8Grouping grouping) { return grouping == Fp8Grouping::kRowTiles ? 1 : kFp8Group; }
int64_t groupCols(Fp8Grouping grouping) { return grouping == Fp8Grouping::kColumnTiles ? 1 : kFp8Group; }

float fp8Scale(float amax, Fp8ScaleRule rule) {
    const float ratio = amax / kE4m3Max;
    if (rule == Fp8ScaleRule::kAmax) return std::max(ratio, kSmallestNormal);
    float scale = kSmallestNormal;
    if (ratio > kSmallestNormal) {
        int exponent = 0;
        const float mantissa = std::frexp(ratio, &exponent);  // ratio = mantissa 2^exponent, mantissa in [0.5, 1)
        scale = std::ldexp(1.0f, mantissa == 0.5f ? exponent - 1 : exponent);
    }
    // The ratio was rounded to fp32: where it fell onto a power of two from above, that power is
    // one too small (amax / scale just over 448).
    if (amax / scale > kE4m3Max) scale *= 2.0f;
    return scale;
}

c10::Float8_e4m3fn saturatingE4m3(float v) { return c10::Float8_e4m3fn(std::clamp(v, -kE4m3Max, kE4m3Max)); }

Fp8Matrix quantiseFp8(const torch::Tensor& matrix, Fp8Grouping grouping, Fp8ScaleRule rule, const std::string& what) {
    TORCH_CHECK(matrix.dim() == 2 && matrix.device().is_cpu() && matrix.scalar_type() == torch::kFloat32,
                "quantiseFp8 takes a 2-D fp32 CPU matrix, got ", matrix.sizes(), " ", matrix.scalar_type(), " on ",
                matrix.device());
    const int64_t rows = matrix.size(0), cols = matrix.size(1);
    const int64_t row_extent = groupRows(grouping), col_extent = groupCols(grouping);
    const int64_t row_groups = groupsAlong(rows, row_extent), col_groups = groupsAlong(cols, col_extent);
    const int64_t row_stride = matrix.stride(0), col_stride = matrix.stride(1);
    Fp8Matrix q;
    q.grouping = grouping;
    q.values = at::empty({rows, cols}, matrix.options().dtype(at::kFloat8_e4m3fn));
    q.scales = at::empty({row_groups, col_groups}, matrix.options());
    const float* source = matrix.data_ptr<float>();
    auto* values = q.values.data_ptr<c10::Float8_e4m3fn>();
    float* scales = q.scales.data_ptr<float>();
    // One task per band of row_extent rows: its groups' maxima first, then its values.
    parallelFor(0, row_groups, itemsPerTask(row_extent * cols), [&](int64_t first, int64_t last) {
        std::vector<float> amax(col_groups);
        for (int64_t band = first; band < last; ++band) {
            const int64_t r0 = band * row_extent, r1 = std::min(rows, r0 + row_extent);
            std::fill(amax.begin(), amax.end(), 0.0f);
            for (int64_t r = r0; r < r1; ++r) {
                const float* row = source + r * row_stride;
                for (int64_t g = 0; g < col_groups; ++g) {
                    float m = amax[g];
                    for (int64_t c = g * col_extent, end = std::min(cols, c + col_extent); c < end; ++c) {
                        const float v = row[c * col_stride];
                        if (!std::isfinite(v)) refuseNonFiniteFp8(v, r, c, what);
                        m = std::max(m, std::abs(v));
                    }
                    amax[g] = m;
                }
            }
            float* band_scales = scales + band * col_groups;
            for (int64_t g = 0; g < col_groups; ++g)
                band_scales[g] = fp8Scale(amax[g], rule);
            for (int64_t r = r0; r < r1; ++r) {
                const float* row = source + r * row_stride;
                c10::Float8_e4m3fn* out = values + r * cols;
                for (int64_t g = 0; g < col_groups; ++g) {
                    const float scale = band_scales[g];
                    for (int64_t c = g * col_extent, end = std::min(cols, c + col_extent); c < end; ++c)
                        out[c] = saturatingE4m3(row[c * col_stride] / scale);
                }
            }
        }
    });
    return q;
}

torch::Tensor dequantiseFp8(const Fp8Matrix& q) {
    const int64_t rows = q.values.size(0), cols = q.values.size(1);
    const int64_t row_extent = groupRows(q.grouping), col_extent = groupCols(q.grouping);
    const int64_t col_groups = q.scales.size(1);
    auto out = at::empty({rows, cols}, q.values.options().dtype(torch::kFloat32));
    const auto& table = e4m3Values();
    const auto* bits = reinterpret_cast<const uint8_t*>(q.values.data_ptr<c10::Float8_e4m3fn>());
    const float* scales = q.scales.data_ptr<float>();
    float* result = out.data_ptr<float>();
    parallelFor(0, rows, itemsPerTask(cols), [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r) {
            const float* row_scales = scales + (r / row_extent) * col_groups;
            for (int64_t g = 0; g < col_groups; ++g) {
                const float scale = row_scales[g];
                for (int64_t c = g * col_extent, end = std::min(cols, c + col_extent); c < end; ++c)
                    result[r * cols + c] = table[bits[r * cols + c]] * scale;
            }
        }
    });
    return out;
}

int64_t fp8Bytes(int64_t rows, int64_t cols, Fp8Grouping grouping) {
    return rows * cols +
           int64_t(sizeof(float)) * groupsAlong(rows, groupRows(grouping)) * groupsAlong(cols, groupCols(grouping));
}

}  // namespace trainbench::kernels
