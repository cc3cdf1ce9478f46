// The global batch per step: fixed, a linear ramp in tokens, or grown where the critical batch
// says; in multiples of m x W; and the step at which the run has read what it planned.
#include "trainbench/batch_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trainbench {

BatchSchedule::BatchSchedule(const RunConfig& c)
    : policy_(batchPolicy(c.train) == BatchPolicy::Adaptive                               ? Policy::Adaptive
              : batchPolicy(c.train) == BatchPolicy::Ramp && c.train.batch_ramp_start > 0 ? Policy::Ramp
                                                                               : Policy::Fixed),
      unit_(std::max<int64_t>(1, c.train.micro_batch_size * c.runtime.world_size)),
      start_(c.train.batch_ramp_start),
      end_(std::max<int64_t>(1, c.globalBatch())),
      ramp_tokens_(c.train.batch_ramp_tokens),
      seq_len_(c.train.seq_len),
      world_size_(std::max<int64_t>(1, c.runtime.world_size)),
      steps_(c.train.steps),
      fixed_steps_(c.optimizerSteps()),
      planned_samples_(c.plannedSamples() > 0 ? c.plannedSamples() : -1),
      drop_incomplete_(incompleteWindow(c.train) == IncompleteWindow::Drop),
      rule_(lrBatchRule(c.train)) {
    // An adaptive run counted in steps reads what the fixed run of those steps would.
    if (policy_ == Policy::Adaptive && planned_samples_ < 0) planned_samples_ = steps_ * end_;
}

int64_t BatchSchedule::rampBatch(int64_t first) const {
    const double progress =
        ramp_tokens_ > 0 ? std::min(1.0, double(first) * double(seq_len_) / double(ramp_tokens_)) : 1.0;
    const double wanted = double(start_) + double(end_ - start_) * progress;
    return std::clamp<int64_t>(static_cast<int64_t>(std::floor(wanted / double(unit_))) * unit_, unit_,
                               std::max(unit_, end_));
}

void BatchSchedule::extendTo(int64_t step) const {
    while (static_cast<int64_t>(batches_.size()) <= step) {
        const int64_t s = static_cast<int64_t>(batches_.size());
        const int64_t first = batches_.empty() ? 0 : firsts_.back() + batches_.back();
        int64_t batch = end_;
        if (policy_ == Policy::Ramp) batch = rampBatch(first);
        for (const auto& [from, size] : changes_)
            if (from <= s) batch = size;
        firsts_.push_back(first);
        batches_.push_back(batch);
    }
}

int64_t BatchSchedule::scheduledBatch(int64_t step) const {
    if (policy_ == Policy::Fixed) return end_;
    extendTo(step);
    return batches_[step];
}

int64_t BatchSchedule::firstSample(int64_t step) const {
    if (policy_ == Policy::Fixed) return step * end_;
    extendTo(step);
    return firsts_[step];
}

int64_t BatchSchedule::globalBatch(int64_t step) const {
    const int64_t scheduled = scheduledBatch(step);
    if (planned_samples_ < 0) return scheduled;
    return std::clamp<int64_t>(planned_samples_ - firstSample(step), 0, scheduled);
}

int64_t BatchSchedule::accumulation(int64_t step, int64_t m) const {
    return std::max<int64_t>(1, globalBatch(step) / std::max<int64_t>(1, m * world_size_));
}

bool BatchSchedule::finished(int64_t step) const {
    if (planned_samples_ < 0) return step >= steps_;
    const int64_t left = planned_samples_ - firstSample(step);
    return left <= 0 || (drop_incomplete_ && left < scheduledBatch(step));
}

int64_t BatchSchedule::plannedSteps() const {
    if (policy_ == Policy::Fixed || planned_samples_ < 0) return fixed_steps_;
    // finished() only turns true (the samples left shrink, the batch never does): the first step
    // at which it does, by doubling and then halving, so that the GUI and the learning rate can
    // ask every step without a pass over the whole run.
    int64_t high = 1;
    while (!finished(high)) high *= 2;
    int64_t low = high / 2;  // not finished (or 0)
    if (finished(low)) return low;
    while (high - low > 1) {
        const int64_t middle = low + (high - low) / 2;
        (finished(middle) ? high : low) = middle;
    }
    return high;
}

int64_t BatchSchedule::plannedTokens() const {
    // Every planned sample is read unless a cut last window is dropped.
    if (planned_samples_ >= 0 && !drop_incomplete_) return planned_samples_ * seq_len_;
    const int64_t steps = plannedSteps();
    if (steps == 0) return 0;
    return (firstSample(steps - 1) + globalBatch(steps - 1)) * seq_len_;
}

double BatchSchedule::lrFactor(int64_t step) const {
    if (policy_ == Policy::Fixed || rule_ == LrBatchRule::None) return 1.0;
    const double ratio = double(scheduledBatch(step)) / double(end_);
    return rule_ == LrBatchRule::Linear ? ratio : std::sqrt(ratio);
}

void BatchSchedule::grow(int64_t step, int64_t batch) {
    if (policy_ != Policy::Adaptive) throw std::logic_error("BatchSchedule::grow under a fixed or ramping policy");
    if (!changes_.empty() && step <= changes_.back().first)
        throw std::logic_error("BatchSchedule::grow: changes must come in step order");
    changes_.emplace_back(step, batch);
    // Steps before `step` keep their batches and positions; later ones are recomputed.
    if (static_cast<int64_t>(batches_.size()) > step) {
        batches_.resize(step);
        firsts_.resize(step);
    }
}

void BatchSchedule::restore(std::vector<std::pair<int64_t, int64_t>> changes) {
    changes_ = std::move(changes);
    batches_.clear();
    firsts_.clear();
}

}  // namespace trainbench
