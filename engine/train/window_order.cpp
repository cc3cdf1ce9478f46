// The window's order from the config, and its implementations.
#include "train/window_order.h"

#include "train/micro_batch_order.h"
#include "train/unit_order.h"

namespace trainbench {

WindowSchedule resolvedWindowSchedule(const RunConfig& config, const Placement& placement) {
    const WindowSchedule asked = windowSchedule(config.runtime);
    if (asked != WindowSchedule::Auto) return asked;
    // Where the weights stay on the device nothing is streamed, and the unit order would only
    // keep K boundary activations per block for nothing; where they are streamed it moves them
    // twice a window instead of 2K times.
    const bool streamed = placement.sharded.weights && placement.weights != Tier::Device;
    return streamed && recomputation(config.runtime) == Recomputation::Full ? WindowSchedule::Unit
                                                                             : WindowSchedule::MicroBatch;
}

std::unique_ptr<WindowOrder> makeWindowOrder(WindowSchedule schedule) {
    if (schedule == WindowSchedule::Unit) return std::make_unique<UnitOrder>();
    return std::make_unique<MicroBatchOrder>();
}

}  // namespace trainbench
