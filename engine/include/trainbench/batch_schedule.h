// BatchSchedule: the global batch of each optimizer step under train.batch_policy.
#pragma once

#include <cstdint>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

// A pure function of the config and the step, so every rank and a resumed run agree without
// state. Under "ramp" the global batch of a step is B(t) = B0 + (B1 - B0) min(1, t / T), t the
// token positions (sequences x seq_len) the steps before it consumed, rounded down to a
// multiple of m x W (at least one), B0 = train.batch_ramp_start, B1 = m x K x W, T =
// train.batch_ramp_tokens; under "fixed" it is B1. Steps read consecutive samples: step s starts
// at the sum of the batches before it.
class BatchSchedule {
public:
    explicit BatchSchedule(const RunConfig& config);
    bool ramps() const { return ramp_; }
    // Sequences of step `step` (0-based) over all ranks.
    int64_t globalBatch(int64_t step) const;
    // Micro-batches per rank at micro-batch size `m` (after an out-of-memory back-off m may
    // have shrunk; the global batch stays).
    int64_t accumulation(int64_t step, int64_t m) const;
    // The global index of the step's first sample: the sequences the steps before it read.
    int64_t firstSample(int64_t step) const;
    // The token positions (sequences x seq_len) the steps before `step` read: the tokens axis
    // and planned length of a run (a fixed batch: step x B x seq_len).
    int64_t tokensBefore(int64_t step) const { return firstSample(step) * seq_len_; }
    // The learning rate's factor at this step against the configured batch B1:
    // sqrt(B / B1), B / B1 or 1 (train.lr_batch_rule).
    double lrFactor(int64_t step) const;

private:
    void extendTo(int64_t step) const;
    bool ramp_;
    int64_t unit_, start_, end_, ramp_tokens_, seq_len_;
    int world_size_;
    std::string rule_;
    mutable std::vector<int64_t> batches_, firsts_;  // per step, computed as far as asked
};

}  // namespace trainbench
