// EmaSmoother: TensorBoard's debiased exponential moving average of a curve (the live plots' and Compare's).
#pragma once

namespace trainbench::gui {

// Feeds one value at a time, so a live curve smooths the full series as it grows and never
// a downsampled copy. Starts from last = 0, n = 0; the division by (1 - w^n) removes the
// pull towards that zero start, so the first smoothed value equals the first raw value.
class EmaSmoother {
public:
    // weight in [0, 1): 0 leaves the series unchanged; values outside are clamped into range.
    explicit EmaSmoother(double weight = 0.6);

    // The smoothed value at this point. A NaN or infinite value is returned unchanged and
    // leaves the state alone: one diverged step must not poison every later point.
    double add(double value);
    void reset();

    double weight() const { return weight_; }
    // Finite values taken in since the last reset.
    long count() const { return count_; }

private:
    double weight_;
    double last_ = 0.0;
    double weight_power_ = 1.0;  // w^n, kept as a running product instead of calling pow per point
    long count_ = 0;
};

}  // namespace trainbench::gui
