// Rotary embedding: YaRN frequencies from the reference formulas, rotation of adjacent pairs.
#include "model/rotary.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace trainbench {
namespace {

// Rotary dimension index at which the wavelength makes `rotations` turns over original_seq_len.
double correctionDim(double rotations, const ModelConfig& m) {
    return m.qk_rope_head_dim * std::log(m.original_seq_len / (rotations * 2 * std::numbers::pi)) /
           (2 * std::log(m.rope_theta));
}

}  // namespace

std::pair<double, double> yarnCorrectionRange(const ModelConfig& m) {
    double low = std::max(std::floor(correctionDim(m.beta_fast, m)), 0.0);
    double high = std::min(std::ceil(correctionDim(m.beta_slow, m)), double(m.qk_rope_head_dim - 1));
    return {low, high};
}

std::vector<double> rotaryFrequencies(const ModelConfig& m) {
    const int64_t half = m.qk_rope_head_dim / 2;
    std::vector<double> freqs(half);
    for (int64_t j = 0; j < half; ++j) freqs[j] = 1.0 / std::pow(m.rope_theta, double(2 * j) / m.qk_rope_head_dim);
    if (!m.yarnActive()) return freqs;
    auto [low, high] = yarnCorrectionRange(m);
    if (low == high) high += 0.001;
    for (int64_t j = 0; j < half; ++j) {
        double ramp = std::clamp((j - low) / (high - low), 0.0, 1.0);
        double smooth = 1.0 - ramp;
        freqs[j] = freqs[j] / m.rope_factor * (1.0 - smooth) + freqs[j] * smooth;
    }
    return freqs;
}

double attentionSoftmaxScale(const ModelConfig& m) {
    double scale = 1.0 / std::sqrt(double(m.qkHeadDim()));
    if (m.yarnActive()) {
        double factor = 0.1 * m.mscale * std::log(m.rope_factor) + 1.0;
        scale *= factor * factor;
    }
    return scale;
}

RotaryTable::RotaryTable(const ModelConfig& model) : freqs_(rotaryFrequencies(model)) {}

void RotaryTable::ensure(int64_t T, const torch::Device& device, torch::ScalarType dtype) {
    if (cos_.defined() && cos_.size(0) >= T && cos_.device() == device && cos_.scalar_type() == dtype) return;
    const int64_t half = static_cast<int64_t>(freqs_.size());
    auto angles = torch::empty({T, half}, torch::kFloat64);
    auto a = angles.accessor<double, 2>();
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < half; ++j) a[t][j] = double(t) * freqs_[j];
    cos_ = angles.cos().to(device, dtype);
    sin_ = angles.sin().to(device, dtype);
}

torch::Tensor RotaryTable::apply(const torch::Tensor& x) {
    const int64_t T = x.size(1);
    // Angles in fp32 at least, as the reference's complex64 table.
    auto dtype = x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    ensure(T, x.device(), dtype);
    auto pairs = x.to(dtype).unflatten(-1, {-1, 2});  // [B, T, H, R/2, 2]
    auto even = pairs.select(-1, 0), odd = pairs.select(-1, 1);
    auto c = cos_.slice(0, 0, T).view({1, T, 1, -1});
    auto s = sin_.slice(0, 0, T).view({1, T, 1, -1});
    auto rotated = torch::stack({even * c - odd * s, even * s + odd * c}, -1);
    return rotated.flatten(-2).to(x.scalar_type());
}

}  // namespace trainbench
