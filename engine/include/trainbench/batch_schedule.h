// BatchSchedule: the global batch of each optimizer step under train.batch_policy, and where
// the run ends.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

// Under "fixed" every step's batch is the configured B1 = m x K x W. Under "ramp" the batch of
// a step is B(t) = B0 + (B1 - B0) min(1, t / T), t the token positions (sequences x seq_len)
// the steps before it consumed, rounded down to a multiple of m x W (at least one), B0 =
// train.batch_ramp_start, T = train.batch_ramp_tokens: a pure function of the config, so every
// rank and a resumed run agree without state. Under "adaptive" the batch starts at B1 and grows
// where grow() says (the run's BatchAdaptation decides, on every rank alike); its changes are
// the state a checkpoint keeps. Steps read consecutive samples: step s starts at the sum of the
// batches before it.
//
// The run ends after train.steps steps, or once it has read train.samples sequences
// (train.tokens / seq_len); an adaptive run counted in steps reads what a fixed run of that
// many steps would (steps x B1 sequences), in fewer, larger steps. A last window the planned
// samples cut short is scaled by its own token count or dropped (train.incomplete_window).
class BatchSchedule {
public:
    explicit BatchSchedule(const RunConfig& config);
    bool ramps() const { return policy_ == Policy::Ramp; }
    bool adapts() const { return policy_ == Policy::Adaptive; }
    bool varies() const { return policy_ != Policy::Fixed; }

    // The batch the policy asks for at step `step` (0-based), in sequences over all ranks.
    int64_t scheduledBatch(int64_t step) const;
    // The sequences the step reads: the scheduled batch, or what is left of the planned samples.
    int64_t globalBatch(int64_t step) const;
    // Micro-batches per rank at micro-batch size `m` (after an out-of-memory back-off m may
    // have shrunk; the global batch stays).
    int64_t accumulation(int64_t step, int64_t m) const;
    // The global index of the step's first sample: the sequences the steps before it read.
    int64_t firstSample(int64_t step) const;
    // The token positions (sequences x seq_len) the steps before `step` read: the tokens axis.
    int64_t tokensBefore(int64_t step) const { return firstSample(step) * seq_len_; }
    // Whether the run has ended before step `step`.
    bool finished(int64_t step) const;
    // The steps the run takes (adaptive: if its batch grows no more), and the token positions
    // it reads in them.
    int64_t plannedSteps() const;
    int64_t plannedTokens() const;
    // The learning rate's factor at this step against the configured batch B1 (the ramp's end,
    // the adaptive start): sqrt(B / B1), B / B1 or 1 (train.lr_batch_rule).
    double lrFactor(int64_t step) const;

    // Adaptive: from step `step` on the batch is `batch` sequences. Steps before it keep theirs.
    void grow(int64_t step, int64_t batch);
    // Adaptive: every change so far as (first step, batch), in order; a resumed run restores them.
    const std::vector<std::pair<int64_t, int64_t>>& changes() const { return changes_; }
    void restore(std::vector<std::pair<int64_t, int64_t>> changes);
    // m x W at the configured m: every batch is a multiple of it.
    int64_t unit() const { return unit_; }

private:
    enum class Policy { Fixed, Ramp, Adaptive };
    void extendTo(int64_t step) const;
    int64_t rampBatch(int64_t first) const;
    Policy policy_;
    int64_t unit_, start_, end_, ramp_tokens_, seq_len_, world_size_, steps_;
    int64_t fixed_steps_;      // RunConfig::optimizerSteps: the plan of a fixed batch, and of any counted in steps
    int64_t planned_samples_;  // -1: the run is counted in steps
    bool drop_incomplete_;
    LrBatchRule rule_;
    std::vector<std::pair<int64_t, int64_t>> changes_;
    mutable std::vector<int64_t> batches_, firsts_;  // per step, computed as far as asked
};

}  // namespace trainbench

// Floor: train/ (engine/README.md)
