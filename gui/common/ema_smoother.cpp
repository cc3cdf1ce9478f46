// EmaSmoother: TensorBoard's debiased exponential moving average of a curve (the live plots' and Compare's).
#include "common/ema_smoother.h"

#include <algorithm>
#include <cmath>

namespace trainbench::gui {

EmaSmoother::EmaSmoother(double weight) {
    // A weight of 1 would freeze the average at zero and divide by zero in the debiasing.
    weight_ = std::isfinite(weight) ? std::clamp(weight, 0.0, 0.999999) : 0.6;
}

double EmaSmoother::add(double value) {
    if (!std::isfinite(value)) return value;
    last_ = last_ * weight_ + (1.0 - weight_) * value;
    ++count_;
    weight_power_ *= weight_;
    return last_ / (1.0 - weight_power_);
}

void EmaSmoother::reset() {
    last_ = 0.0;
    weight_power_ = 1.0;
    count_ = 0;
}

}  // namespace trainbench::gui
