// SampleLog: the samples a run wrote as it trained, grouped by step: what the Samples panel shows, without widgets.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "trainbench/run_sample.h"

namespace trainbench::gui {

// Samples arrive one event each, a step's prompts in the order the run wrote them; a store
// replays a run's events in step order, a live run in the order it trains. Either way a step's
// group keeps its samples in arrival order, and the groups read newest step first.
class SampleLog {
public:
    void add(RunSample sample);
    void clear();

    bool empty() const { return by_step_.empty(); }
    // Samples in all steps.
    int count() const { return count_; }
    // The steps that have samples, newest first.
    std::vector<int64_t> steps() const;
    // The samples of `step` in arrival order; empty when it has none.
    const std::vector<RunSample>& at(int64_t step) const;

private:
    std::map<int64_t, std::vector<RunSample>> by_step_;
    int count_ = 0;
};

}  // namespace trainbench::gui
