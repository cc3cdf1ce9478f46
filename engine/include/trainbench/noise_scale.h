// The gradient noise scale from accumulation (docs/design/noise_scale.md): the token-weighted estimates of
// |G|^2 and tr(Sigma) from one window's micro-batch gradients, and their smoothing into a
// critical batch. Torch-free: the trainer reduces the sums, this does the arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainbench {

// What one window gives, reduced over the ranks. Micro-batch k (of M with any counted targets,
// over every rank) has n_k target tokens and the raw token-sum gradient s_k; N = sum n_k.
struct NoiseScaleSums {
    double fresh_sq_per_token = 0;  // sum_k |s_k|^2 / n_k
    double window_sq = 0;           // |sum_k s_k|^2 (before clipping)
    double tokens = 0;              // N
    int64_t micro_batches = 0;      // M
};

// The unbiased per-step estimates (docs/design/noise_scale.md section 2, token weighting): with
// A = sum_k |s_k|^2 / (N n_k) and T = |sum_k s_k|^2 / N^2,
//   |G|^2 = (M T - A) / (M - 1),   tr(Sigma_token) = N (A - T) / (M - 1).
// One step's |G|^2 can be negative. None for M < 2: one micro-batch has no small batch.
struct NoiseScaleParts {
    double grad_sq = 0;  // |G|^2
    double trace = 0;    // tr(Sigma) per token
};
std::optional<NoiseScaleParts> noiseScaleParts(const NoiseScaleSums& sums);

// Bias-corrected exponential moving averages of both parts, the critical batch as the ratio of
// the averages (clamped only after averaging), and its relative uncertainty from the averages'
// spread (delta method with the parts' covariance, over the averages' effective sample count).
// The decay is per token, not per step: each step weighs decay^(tokens / reference_tokens)
// with the first step's tokens as the reference, so the window stays fixed in data when the
// batch grows.
class NoiseScaleTracker {
public:
    explicit NoiseScaleTracker(double decay = 0.98) : decay_(decay) {}
    void observe(const NoiseScaleParts& parts, double tokens_in_step);
    bool ready() const { return weight_ > 0; }
    double gradSq() const;  // smoothed |G|^2
    double trace() const;   // smoothed tr(Sigma) per token
    // tr / |G|^2 in tokens, 0 when the smoothed |G|^2 is not positive (no estimate yet).
    double criticalBatchTokens() const;
    // One standard error of criticalBatchTokens() relative to it; infinite until the averages'
    // effective sample count reaches two (three steps).
    double relativeError() const;

    // For checkpoints: every number the tracker holds, and back.
    std::vector<double> state() const;
    // Throws std::invalid_argument on a list of the wrong length.
    void restore(const std::vector<double>& state);

private:
    double decay_;
    double reference_tokens_ = 0;
    double weight_ = 0, weight_sq_ = 0;  // sum of the weights, of their squares (bias correction, effective count)
    double grad_sq_ = 0, trace_ = 0;                        // weighted sums of the parts
    double grad_sq2_ = 0, trace2_ = 0, cross_ = 0;          // ... of their squares and product
};

}  // namespace trainbench

// Floor: analysis/ (engine/README.md)
