// Rotary embedding: YaRN frequencies from the reference formulas, rotation of adjacent pairs.
#include "model/rotary.h"

#include "kernels/rotary.h"

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

torch::Tensor RotaryTable::rotatedAngles(int64_t T) const {
    const int64_t rotated = static_cast<int64_t>(freqs_.size());
    auto angles = torch::empty({T, rotated}, torch::kFloat64);
    auto a = angles.accessor<double, 2>();
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < rotated; ++j) a[t][j] = double(t) * freqs_[j];
    return angles;
}

const torch::Tensor& RotaryTable::table(int64_t T, int64_t skip, const torch::Device& device, torch::ScalarType real) {
    const auto complex = real == torch::kFloat64 ? torch::kComplexDouble : torch::kComplexFloat;
    Cached* slot = nullptr;
    for (auto& cached : tables_)
        if (cached.skip == skip) slot = &cached;
    if (slot && slot->table.size(0) >= T && slot->table.device() == device && slot->table.scalar_type() == complex)
        return slot->table;
    if (!slot) slot = &tables_.emplace_back(Cached{skip, {}});
    // The passed pairs turn by 0; the table in the compute precision (at least fp32, as the
    // reference's complex64 table).
    auto angles = torch::cat({torch::zeros({T, skip / 2}, torch::kFloat64), rotatedAngles(T)}, 1);
    slot->table = torch::polar(torch::ones_like(angles), angles).to(device, complex);
    return slot->table;
}

const RotaryTable::Turns& RotaryTable::turns(int64_t T, const torch::Device& device, torch::ScalarType real) {
    if (turns_.cos.defined() && turns_.cos.size(0) >= T && turns_.cos.device() == device &&
        turns_.cos.scalar_type() == real)
        return turns_;
    // Rounded once to the compute precision, as the complex table's are.
    const auto angles = rotatedAngles(T);
    turns_ = {angles.cos().to(device, real), angles.sin().to(device, real)};
    return turns_;
}

torch::Tensor RotaryTable::apply(const torch::Tensor& x, int64_t skip) {
    if (x.dim() == 4 && (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kFloat64)) {
        const Turns& t = turns(x.size(1), x.device(), x.scalar_type());
        if (kernels::rotaryTakes(x, t.cos, t.sin, skip)) return kernels::rotate(x, t.cos, t.sin, skip);
    }
    const int64_t T = x.size(1), pairs = x.size(-1) / 2;
    const auto real = x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    auto rotation = table(T, skip, x.device(), real).slice(0, 0, T).view({1, T, 1, pairs});
    // view_as_complex needs even strides; a channel slice of a wider tensor may not have them.
    auto as_pairs = x.to(real).unflatten(-1, {pairs, 2});
    bool viewable = as_pairs.stride(-1) == 1 && as_pairs.storage_offset() % 2 == 0;
    for (int64_t d = 0; d + 1 < as_pairs.dim(); ++d) viewable = viewable && as_pairs.stride(d) % 2 == 0;
    // clone, not contiguous(): a tensor of size-1 dimensions counts as contiguous whatever its
    // offset, and contiguous() would hand it back unchanged.
    if (!viewable) as_pairs = as_pairs.clone(at::MemoryFormat::Contiguous);
    auto rotated = torch::view_as_real(torch::view_as_complex(as_pairs) * rotation).flatten(-2);
    return rotated.to(x.scalar_type());
}

}  // namespace trainbench

namespace trainbench {

torch::Tensor RotaryTable::applyAt(const torch::Tensor& x, const torch::Tensor& positions, int64_t skip) const {
    const int64_t pairs = static_cast<int64_t>(freqs_.size()), R = 2 * pairs;
    auto freqs = torch::tensor(freqs_, torch::kFloat64).to(x.device());
    auto angles = positions.to(torch::kFloat64).unsqueeze(-1) * freqs;  // [B, T, R/2], fp64 like the table
    auto cos = angles.cos().to(x.scalar_type()).unsqueeze(2), sin = angles.sin().to(x.scalar_type()).unsqueeze(2);
    auto pair = x.narrow(-1, skip, R).unflatten(-1, {pairs, 2});
    auto even = pair.select(-1, 0), odd = pair.select(-1, 1);
    auto rotated = torch::stack({even * cos - odd * sin, even * sin + odd * cos}, -1).flatten(-2);
    return skip > 0 ? torch::cat({x.narrow(-1, 0, skip), rotated}, -1) : rotated;
}

}  // namespace trainbench
