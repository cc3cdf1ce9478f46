// WindowNoise: the gradient noise scale's share of a window's one reduction. It adds the
// micro-batches' fresh gradient sums (and, under expert parallelism, the expert group's unions
// of them) to the window's statistics, and after the reduction turns them, with the window's
// own squared norms, into the noise-scale parts of the window, in total and per group
// (docs/design/noise_scale.md section 2).
#pragma once

#include <vector>

#include "comm/collectives.h"
#include "train/fresh_gradient_norms.h"
#include "train/window_statistics.h"

namespace trainbench {

class WindowNoise {
public:
    // Before the reduction. `expert_group`: the ranks that exchange tokens (null without expert
    // parallelism), `expert_parallel` their count; `micro_batches`: K of this window.
    void add(WindowStatistics& stats, FreshGradientNorms& fresh, Collectives* expert_group, int64_t expert_parallel,
             int64_t micro_batches);
    // After it: `group_squares` the window's squared gradient sums per group, `routed_sq` the
    // routed experts' share of their total (0 without expert parallelism). Fills out.noise and
    // out.noise_groups (out.tokens already set).
    void read(const WindowStatistics& stats, const std::vector<double>& group_squares, double routed_sq,
              WindowResult& out) const;

private:
    WindowStatistics::Slot fresh_, routed_;
};

}  // namespace trainbench
