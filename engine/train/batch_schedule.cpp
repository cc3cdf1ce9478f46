// The global batch per step: fixed, or a linear ramp in tokens, in multiples of m x W.
#include "trainbench/batch_schedule.h"

#include <algorithm>
#include <cmath>

namespace trainbench {

BatchSchedule::BatchSchedule(const RunConfig& c)
    : ramp_(c.train.batch_policy == "ramp" && c.train.batch_ramp_start > 0),
      unit_(std::max<int64_t>(1, c.train.micro_batch_size * c.runtime.world_size)),
      start_(c.train.batch_ramp_start),
      end_(c.globalBatch()),
      ramp_tokens_(c.train.batch_ramp_tokens),
      seq_len_(c.train.seq_len),
      world_size_(static_cast<int>(std::max<int64_t>(1, c.runtime.world_size))),
      rule_(c.train.lr_batch_rule) {}

void BatchSchedule::extendTo(int64_t step) const {
    while (static_cast<int64_t>(batches_.size()) <= step) {
        const int64_t first = batches_.empty() ? 0 : firsts_.back() + batches_.back();
        const double progress =
            ramp_tokens_ > 0 ? std::min(1.0, double(first) * double(seq_len_) / double(ramp_tokens_)) : 1.0;
        const double wanted = double(start_) + double(end_ - start_) * progress;
        const int64_t batch = std::clamp<int64_t>(static_cast<int64_t>(std::floor(wanted / double(unit_))) * unit_,
                                                  unit_, std::max(unit_, end_));
        firsts_.push_back(first);
        batches_.push_back(batch);
    }
}

int64_t BatchSchedule::globalBatch(int64_t step) const {
    if (!ramp_) return end_;
    extendTo(step);
    return batches_[step];
}

int64_t BatchSchedule::accumulation(int64_t step, int64_t m) const {
    return std::max<int64_t>(1, globalBatch(step) / std::max<int64_t>(1, m * world_size_));
}

int64_t BatchSchedule::firstSample(int64_t step) const {
    if (!ramp_) return step * end_;
    extendTo(step);
    return firsts_[step];
}

double BatchSchedule::lrFactor(int64_t step) const {
    if (!ramp_ || rule_ == "none" || end_ <= 0) return 1.0;
    const double ratio = double(globalBatch(step)) / double(end_);
    return rule_ == "linear" ? ratio : std::sqrt(ratio);
}

}  // namespace trainbench
