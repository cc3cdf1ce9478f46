// Rotary position embedding with the YaRN frequency correction, and MLA's softmax scale.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "trainbench/run_config.h"

namespace trainbench {

// Inverse frequencies of the qk_rope_head_dim/2 rotary pairs, YaRN-corrected when
// model.max_seq_len > model.original_seq_len. Computed in double for exact tests.
std::vector<double> rotaryFrequencies(const ModelConfig& model);

// The YaRN ramp boundaries (low, high) for the config; meaningful when YaRN is active.
std::pair<double, double> yarnCorrectionRange(const ModelConfig& model);

// qk^-0.5, times m^2 with m = 0.1 * mscale * ln(rope_factor) + 1 when YaRN is active.
double attentionSoftmaxScale(const ModelConfig& model);

// Cos/sin tables for positions 0..T-1 and the rotation of adjacent pairs (2j, 2j+1).
class RotaryTable {
public:
    explicit RotaryTable(const ModelConfig& model);
    // x: [B, T, H, R] with R = qk_rope_head_dim; returns the rotated tensor of the same shape.
    torch::Tensor apply(const torch::Tensor& x);

private:
    void ensure(int64_t T, const torch::Device& device, torch::ScalarType dtype);
    std::vector<double> freqs_;
    torch::Tensor cos_, sin_;  // [T, R/2]
};

}  // namespace trainbench
