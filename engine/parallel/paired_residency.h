// PairedResidency: two weight residencies the model calls as one.
#pragma once

#include "model/weight_residency.h"

namespace trainbench {

// ZeRO stage 3 under expert parallelism: a unit's dense weights are sharded over the world and
// its routed experts over the ranks holding the same experts, so each unit has two owners.
// Each call goes to the first and then the second, in the same order on every rank, so their
// collectives (on different groups) pair up.
class PairedResidency : public WeightResidency {
public:
    PairedResidency(WeightResidency& first, WeightResidency& second) : first_(first), second_(second) {}
    void beforeForward(int64_t unit) override {
        first_.beforeForward(unit);
        second_.beforeForward(unit);
    }
    void afterForward(int64_t unit) override {
        first_.afterForward(unit);
        second_.afterForward(unit);
    }
    void beforeBackward(int64_t unit) override {
        first_.beforeBackward(unit);
        second_.beforeBackward(unit);
    }

private:
    WeightResidency& first_;
    WeightResidency& second_;
};

}  // namespace trainbench
