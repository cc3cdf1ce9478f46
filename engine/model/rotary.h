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

// Rotation of adjacent pairs (2j, 2j+1) by position, as one complex multiply per call: the
// pairs are read as complex numbers and multiplied by e^(i t f_j) from a cached table.
class RotaryTable {
public:
    explicit RotaryTable(const ModelConfig& model);
    // x: [B, T, H, skip + R] with R = qk_rope_head_dim; the first `skip` channels pass through
    // unchanged (the table holds 1 there) and the last R are rotated. Rotating a whole MLA head
    // this way spares splitting it and joining it back, two copies each way in the backward.
    // On the CPU in fp32 or fp64 one node of a loop (kernels/rotary.h) on cosines and sines.
    torch::Tensor apply(const torch::Tensor& x, int64_t skip = 0);
    // The same rotation at given positions ([B, T] int64) instead of 0 .. T-1: decoding, where
    // each row continues at its own position. Composed from ATen operations.
    torch::Tensor applyAt(const torch::Tensor& x, const torch::Tensor& positions, int64_t skip = 0) const;

private:
    // [T', R/2] cosines and sines of the rotated pairs' angles, T' >= T, on x's device and dtype.
    struct Turns {
        torch::Tensor cos, sin;
    };
    const Turns& turns(int64_t T, const torch::Device& device, torch::ScalarType real);
    // [T, R/2] fp64: position t times each rotated pair's frequency.
    torch::Tensor rotatedAngles(int64_t T) const;
    Turns turns_;
    // [T', (skip + R)/2] complex table with T' >= T, on x's device, complex of x's real dtype.
    const torch::Tensor& table(int64_t T, int64_t skip, const torch::Device& device, torch::ScalarType real);
    std::vector<double> freqs_;
    struct Cached {
        int64_t skip;
        torch::Tensor table;
    };
    std::vector<Cached> tables_;  // one per skip in use (MLA: the query's and the key's)
};

}  // namespace trainbench
