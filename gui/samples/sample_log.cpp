// SampleLog: the samples a run wrote as it trained, grouped by step: what the Samples panel shows, without widgets.
#include "samples/sample_log.h"

#include <utility>

namespace trainbench::gui {

void SampleLog::add(RunSample sample) {
    const int64_t step = sample.step;
    by_step_[step].push_back(std::move(sample));
    ++count_;
}

void SampleLog::clear() {
    by_step_.clear();
    count_ = 0;
}

std::vector<int64_t> SampleLog::steps() const {
    std::vector<int64_t> out;
    out.reserve(by_step_.size());
    for (auto it = by_step_.rbegin(); it != by_step_.rend(); ++it) out.push_back(it->first);
    return out;
}

const std::vector<RunSample>& SampleLog::at(int64_t step) const {
    static const std::vector<RunSample> kNone;
    const auto found = by_step_.find(step);
    return found == by_step_.end() ? kNone : found->second;
}

}  // namespace trainbench::gui
