// ExpertParallel: where a MoE layer's routed experts live (runtime.expert_parallel).
#pragma once

#include <cstdint>

#include "comm/collectives.h"

namespace trainbench {

// Rank r of W holds the experts [r_ep * E / EP, (r_ep + 1) * E / EP) of every MoE layer, r_ep
// = r % EP: the EP consecutive ranks of one expert group hold all the experts between them and
// exchange tokens; the W / EP ranks with the same r_ep hold the same experts and sum their
// gradients. `group` is this rank's expert group (EP ranks, rank r_ep in it).
struct ExpertParallel {
    Collectives* group = nullptr;
    int rank = 0;  // r_ep
    int size = 1;  // EP
    int64_t experts_per_rank = 0;
    int64_t firstExpert() const { return static_cast<int64_t>(rank) * experts_per_rank; }
    bool holds(int64_t expert) const {
        return expert >= firstExpert() && expert < firstExpert() + experts_per_rank;
    }
};

}  // namespace trainbench
