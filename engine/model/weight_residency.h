// WeightResidency: where a model unit's weights are between its uses (ZeRO stage 3: on other ranks).
#pragma once

#include <cstdint>

namespace trainbench {

// The model is cut into units that are gathered and released whole: unit 0 is the embedding,
// units 1..L the blocks, unit L + 1 the final norm and the head (TransformerImpl::units()).
// Without a residency every weight is always whole. With one, the model calls it around each
// unit: beforeForward / afterForward bracket the unit's forward (its weights exist only in
// between), and beforeBackward(u) runs once the gradients of every output of unit u are
// complete, that is once every unit after it has finished its backward and just before unit
// u's own backward starts. The calls come in a fixed order on every rank (units 0..L+1
// forward, L+1..0 backward), so a residency may make collective calls in them.
class WeightResidency {
public:
    virtual ~WeightResidency() = default;
    virtual void beforeForward(int64_t unit) = 0;
    virtual void afterForward(int64_t unit) = 0;
    virtual void beforeBackward(int64_t unit) = 0;
};

}  // namespace trainbench
