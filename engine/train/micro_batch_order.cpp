// The micro-batch-major window: the loop of docs/design/accumulation.md.
#include "train/micro_batch_order.h"

#include "kernels/compute_scope.h"
#include "memory/host_to_device.h"

namespace trainbench {
namespace {

// A backward that fails (out of memory) leaves the tasks it had queued, graph nodes and the
// gradients waiting for them (5 MB on the tiny preset), in autograd's ready queue for the
// device. Left alone they were released only during the next window, so the window retried
// after a back-off could run out again at the smaller split. One tiny backward on the same
// device releases them now: measured with the tracking allocator, the bytes held at the next
// window's start return exactly to the steady state (test_memory's
// outOfMemoryBacksOffAndKeepsTheLosses runs out in a backward and backs off once).
void releaseAbandonedBackward(const torch::Device& device) {
    auto x = torch::ones({1}, torch::TensorOptions(device).requires_grad(true));
    (x * 2).sum().backward();
}

}  // namespace

bool MicroBatchOrder::run(const WindowWork& work, WindowParts& p, WindowTotals& totals) {
    const int64_t K = work.micro_batches;
    GradientLayout& layout = p.layout;
    // With multi-token prediction the whole window is read first: the depths' weights in every
    // backward come from its counted targets (WindowWork::mtp_weights). Otherwise one ahead.
    std::vector<MicroBatch> window;
    torch::Tensor mtp_weights;
    std::future<MicroBatch> next;
    if (work.mtp_weights) {
        window = readWindow(work, p.reader);
        mtp_weights = windowMtpWeights(work, window, p.model->mtpDepth());
    } else {
        next = p.reader.first(work.place(0));
    }
    const bool can_recover = layout.recoversFromOutOfMemory();
    for (int64_t k = 0; k < K; ++k) {
        const bool last = k + 1 == K;
        if (!p.control.passBoundary()) {
            if (layout.stopRule() == StopRule::EndsAlone) return false;
            totals.stop_seen = true;
            if (layout.stopRule() == StopRule::AgreedAfterLeaving) break;
        }
        if (work.at_boundary) work.at_boundary(k);
        MicroBatch batch;
        if (!window.empty()) {
            batch = std::move(window[k]);
        } else {
            batch = next.get();
            if (work.edit) work.edit(k, batch);
            if (!last) {
                next = p.reader.start(work.place(k + 1));
            } else if (work.next_window) {
                p.reader.readAhead(*work.next_window);
            }
        }
        layout.beginMicroBatch(last);
        if (p.fresh_norms) p.fresh_norms->beginMicroBatch();
        try {
            LossParts parts = [&] {
                ComputeScope precision(p.device.type(), p.precision);  // the forward only; backward follows its graph
                return p.model->loss(copyToDevice(batch.tokens, p.device), copyToDevice(batch.targets, p.device));
            }();
            layout.beforeBackward(last);
            trainingObjective(parts, mtp_weights).backward();
            if (p.fresh_norms) p.fresh_norms->endMicroBatch(parts.token_count);
            totals.loss_sum += parts.token_loss_sum.detach().to(torch::kFloat64);
            totals.aux_sum += parts.aux_loss_sum.detach().to(torch::kFloat64);
            if (parts.mtp_loss_sums.defined()) totals.mtp_sums += parts.mtp_loss_sums.detach().to(torch::kFloat64);
            totals.count += parts.token_count;
        } catch (const c10::OutOfMemoryError&) {
            if (!can_recover) throw;
            totals.out_of_memory = true;  // the graph of this micro-batch is gone with `parts`
            releaseAbandonedBackward(p.device);
            break;
        }
        layout.endMicroBatch();
    }
    layout.closeMicroBatches(K);  // also on a rank that left the loop early
    return true;
}

}  // namespace trainbench
