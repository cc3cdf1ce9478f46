// The window's order from the config, and what its implementations share.
#include "train/window_order.h"

#include "model/mtp_module.h"
#include "train/micro_batch_order.h"
#include "train/unit_order.h"

namespace trainbench {

std::unique_ptr<WindowOrder> makeWindowOrder(const Placement& placement) {
    if (placement.unit_order) return std::make_unique<UnitOrder>();
    return std::make_unique<MicroBatchOrder>();
}

std::vector<MicroBatch> readWindow(const WindowWork& work, MicroBatchReader& reader) {
    const int64_t K = work.micro_batches;
    std::vector<MicroBatch> window;
    window.reserve(K);
    std::future<MicroBatch> next = reader.first(work.place(0));
    for (int64_t k = 0; k < K; ++k) {
        window.push_back(next.get());
        if (work.edit) work.edit(k, window.back());
        if (k + 1 < K) next = reader.start(work.place(k + 1));
        else if (work.next_window) reader.readAhead(*work.next_window);
    }
    return window;
}

torch::Tensor windowMtpWeights(const WindowWork& work, const std::vector<MicroBatch>& window, int64_t depth) {
    if (!work.mtp_weights) return {};
    torch::Tensor counts = torch::zeros({1 + depth}, torch::kInt64);
    for (const MicroBatch& batch : window) counts += mtpTargetCounts(batch.targets, depth);
    return work.mtp_weights(counts);
}

}  // namespace trainbench
