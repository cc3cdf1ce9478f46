// The noise scale's arithmetic: per-step estimates and their per-token smoothing.
#include "trainbench/noise_scale.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace trainbench {

std::optional<NoiseScaleParts> noiseScaleParts(const NoiseScaleSums& s) {
    if (s.micro_batches < 2 || s.tokens <= 0) return std::nullopt;
    const double M = double(s.micro_batches), N = s.tokens;
    const double A = s.fresh_sq_per_token / N, T = s.window_sq / (N * N);
    return NoiseScaleParts{(M * T - A) / (M - 1), N * (A - T) / (M - 1)};
}

void NoiseScaleTracker::observe(const NoiseScaleParts& parts, double tokens_in_step) {
    if (!std::isfinite(parts.grad_sq) || !std::isfinite(parts.trace) || tokens_in_step <= 0) return;
    if (reference_tokens_ <= 0) reference_tokens_ = tokens_in_step;
    const double keep = std::pow(decay_, tokens_in_step / reference_tokens_);
    const double w = 1.0 - keep;
    auto blend = [&](double& sum, double value) { sum = keep * sum + w * value; };
    blend(grad_sq_, parts.grad_sq);
    blend(trace_, parts.trace);
    blend(grad_sq2_, parts.grad_sq * parts.grad_sq);
    blend(trace2_, parts.trace * parts.trace);
    blend(cross_, parts.grad_sq * parts.trace);
    weight_ = keep * weight_ + w;
    weight_sq_ = keep * keep * weight_sq_ + w * w;
}

double NoiseScaleTracker::gradSq() const { return weight_ > 0 ? grad_sq_ / weight_ : 0.0; }
double NoiseScaleTracker::trace() const { return weight_ > 0 ? trace_ / weight_ : 0.0; }

double NoiseScaleTracker::criticalBatchTokens() const {
    const double g = gradSq();
    return g > 0 ? std::max(0.0, trace() / g) : 0.0;
}

double NoiseScaleTracker::relativeError() const {
    const double g = gradSq(), t = trace();
    if (weight_ <= 0 || g <= 0 || t <= 0) return std::numeric_limits<double>::infinity();
    // The averages' effective sample count: (sum w)^2 / sum w^2.
    const double n = weight_ * weight_ / weight_sq_;
    if (n < 2) return std::numeric_limits<double>::infinity();
    const double var_g = std::max(0.0, grad_sq2_ / weight_ - g * g), var_t = std::max(0.0, trace2_ / weight_ - t * t);
    const double cov = cross_ / weight_ - g * t;
    const double rel_sq = (var_t / (t * t) + var_g / (g * g) - 2 * cov / (t * g)) / (n - 1);
    return std::sqrt(std::max(0.0, rel_sq));
}

std::vector<double> NoiseScaleTracker::state() const {
    return {reference_tokens_, weight_, weight_sq_, grad_sq_, trace_, grad_sq2_, trace2_, cross_};
}

void NoiseScaleTracker::restore(const std::vector<double>& s) {
    if (s.size() != 8) throw std::invalid_argument("noise scale state: 8 numbers expected");
    reference_tokens_ = s[0], weight_ = s[1], weight_sq_ = s[2], grad_sq_ = s[3], trace_ = s[4], grad_sq2_ = s[5],
    trace2_ = s[6], cross_ = s[7];
}

}  // namespace trainbench
