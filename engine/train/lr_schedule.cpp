// Learning-rate schedule.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace trainbench {

double learningRate(const TrainConfig& t, int64_t step, int64_t total_steps) {
    if (step < t.warmup_steps) return t.lr * double(step + 1) / double(t.warmup_steps);
    if (t.schedule == "constant") return t.lr;
    const int64_t decay_steps = std::max<int64_t>(1, total_steps - t.warmup_steps);
    const double progress = std::clamp(double(step - t.warmup_steps) / double(decay_steps), 0.0, 1.0);
    if (t.schedule == "linear") return t.lr + (t.min_lr - t.lr) * progress;
    return t.min_lr + (t.lr - t.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace trainbench
