// The window's order from the config, and its implementations.
#include "train/window_order.h"

#include "train/micro_batch_order.h"
#include "train/unit_order.h"

namespace trainbench {

std::unique_ptr<WindowOrder> makeWindowOrder(const Placement& placement) {
    if (placement.unit_order) return std::make_unique<UnitOrder>();
    return std::make_unique<MicroBatchOrder>();
}

}  // namespace trainbench
