// BatchAdaptation: when an adaptive run's batch grows (train.batch_policy adaptive).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainbench/run_config.h"

namespace trainbench {

// Grows the global batch B by an integer factor once the critical batch estimate has stayed
// above threshold x B for a dwell of token positions (docs/design/noise_scale.md section 4: Merrill et al.
// double B once the measured critical batch exceeds twice it). The estimate is a trend and a
// trigger, not a measurement of the best batch (the same paper found it far below the critical
// batch they measured for Adam), hence the dwell, and growth only. Every rank observes the same
// reduced statistics in the same order, so every rank takes the same decision.
class BatchAdaptation {
public:
    struct Growth {
        int64_t from_batch, to_batch;  // sequences
        double critical_sequences;    // the estimate when it fired
        int64_t dwell_tokens;         // token positions it had stayed above threshold x B
    };
    // `unit`: m x W, of which every batch is a multiple.
    BatchAdaptation(const TrainConfig& train, int64_t unit);
    // After a step of `batch` sequences and `positions` token positions whose smoothed
    // critical batch is `critical_sequences` (NaN while the estimate is not ready): the batch of
    // the next step when it is time to grow.
    std::optional<Growth> observe(int64_t batch, int64_t positions, double critical_sequences);
    // The dwell so far: a checkpoint keeps it so a resumed run decides at the same step.
    int64_t dwellTokens() const { return dwell_; }
    void restore(int64_t dwell_tokens) { dwell_ = dwell_tokens; }
    // "critical batch 71.3 sequences > 2 x 16 for 40,960 tokens".
    std::string explain(const Growth& growth) const;

private:
    double threshold_;
    int64_t dwell_needed_, factor_, largest_batch_;
    int64_t dwell_ = 0;
};

}  // namespace trainbench
