// MicroBatchOrder: each micro-batch of a window through the whole model, then the next.
#pragma once

#include "train/window_order.h"

namespace trainbench {

// runtime.window_schedule micro_batch: per micro-batch the forward through every unit, then
// its backward; the layout's micro-batch hooks around each (gradient buckets, stage 3's
// gathers per unit and micro-batch: weights cross 2K times a window). A stop is looked for at
// every micro-batch boundary, and an out-of-memory micro-batch ends the window where the
// layout can drop it.
class MicroBatchOrder : public WindowOrder {
public:
    bool run(const WindowWork& work, WindowParts& parts, WindowTotals& totals) override;
};

}  // namespace trainbench
