// Learning-rate schedule.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace trainbench {
namespace {

// The decayed rate at `progress` in [0, 1] of the decay.
double decayed(const TrainConfig& t, double progress) {
    if (lrSchedule(t) == LrSchedule::Constant) return t.lr;
    progress = std::clamp(progress, 0.0, 1.0);
    if (lrSchedule(t) == LrSchedule::Linear) return t.lr + (t.min_lr - t.lr) * progress;
    return t.min_lr + (t.lr - t.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace

double learningRate(const TrainConfig& t, int64_t step, int64_t total_steps) {
    if (step < t.warmup_steps) return t.lr * double(step + 1) / double(t.warmup_steps);
    const int64_t decay_steps = std::max<int64_t>(1, total_steps - t.warmup_steps);
    return decayed(t, double(step - t.warmup_steps) / double(decay_steps));
}

double learningRate(const TrainConfig& t, const TokenClock& c) {
    if (t.warmup_tokens > 0) {
        if (c.tokens_before < t.warmup_tokens)
            return t.lr * std::min(1.0, double(c.tokens_through) / double(t.warmup_tokens));
    } else if (c.step < t.warmup_steps) {
        return t.lr * double(c.step + 1) / double(t.warmup_steps);
    }
    const int64_t decay = std::max<int64_t>(1, c.total - c.warmup_end);
    return decayed(t, double(c.tokens_before - c.warmup_end) / double(decay));
}

}  // namespace trainbench
