// The adaptive batch policy's trigger: above c x B for a dwell, then an integer factor.
#include "train/batch_adaptation.h"

#include <cmath>
#include <sstream>

namespace trainbench {

BatchAdaptation::BatchAdaptation(const TrainConfig& t, int64_t unit)
    : threshold_(t.batch_adapt_threshold),
      dwell_needed_(t.batch_adapt_dwell_tokens),
      factor_(t.batch_adapt_factor),
      largest_batch_(t.batch_adapt_max_accumulation * unit) {}

std::optional<BatchAdaptation::Growth> BatchAdaptation::observe(int64_t batch, int64_t positions,
                                                                double critical_sequences) {
    if (!std::isfinite(critical_sequences) || critical_sequences <= threshold_ * double(batch)) {
        dwell_ = 0;
        return std::nullopt;
    }
    dwell_ += positions;
    if (dwell_ < dwell_needed_) return std::nullopt;
    // The largest integer factor up to batch_adapt_factor that stays within the largest K.
    int64_t factor = factor_;
    while (factor >= 2 && batch * factor > largest_batch_) --factor;
    if (factor < 2) return std::nullopt;  // at the largest batch: keep the dwell, nothing to do
    Growth growth{batch, batch * factor, critical_sequences, dwell_};
    dwell_ = 0;
    return growth;
}

std::string BatchAdaptation::explain(const Growth& g) const {
    std::ostringstream out;
    out.precision(3);
    out << "critical batch " << g.critical_sequences << " sequences > " << threshold_ << " x " << g.from_batch
        << " for " << g.dwell_tokens << " tokens";
    return out.str();
}

}  // namespace trainbench
