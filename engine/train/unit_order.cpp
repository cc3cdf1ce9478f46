// The unit-major window: forwards unit by unit over the micro-batches, backwards likewise.
#include "train/unit_order.h"

#include <vector>

#include "kernels/compute_scope.h"
#include "memory/host_to_device.h"

namespace trainbench {

bool UnitOrder::run(const WindowWork& work, WindowParts& p, WindowTotals& totals) {
    const int64_t K = work.micro_batches;
    GradientLayout& layout = p.layout;
    Transformer& model = p.model;
    if (!p.control.passBoundary()) {
        if (layout.stopRule() == StopRule::EndsAlone) return false;
        totals.stop_seen = true;  // the window runs to its end; every rank drops it there
    }
    if (work.at_boundary) work.at_boundary(0);
    // The window's micro-batches, all of them (token ids: small beside one activation).
    std::vector<torch::Tensor> tokens(K), targets(K);
    torch::Tensor mtp_weights;
    {
        std::vector<MicroBatch> window = readWindow(work, p.reader);
        mtp_weights = windowMtpWeights(work, window, model->mtpDepth());
        for (int64_t k = 0; k < K; ++k) {
            tokens[k] = copyToDevice(window[k].tokens, p.device);
            targets[k] = copyToDevice(window[k].targets, p.device);
        }
    }
    const int64_t U = model->unitCount();
    const int64_t head = U - 1;
    // inputs[u][k]: unit u's input for micro-batch k (u = 1..head); auxes[u][k]: block u's
    // balance loss per sequence (undefined for a dense block).
    std::vector<std::vector<torch::Tensor>> inputs(U, std::vector<torch::Tensor>(K));
    std::vector<std::vector<torch::Tensor>> auxes(U, std::vector<torch::Tensor>(K));
    // Placement::boundaries Host: each input waits in host memory between its forward and its
    // backward (a copy down and one up: the same bits).
    const bool on_host = p.boundaries == Tier::Host && !p.device.is_cpu();
    auto keep = [&](const torch::Tensor& t) {
        if (!on_host) return t;
        totals.boundary_bytes_down += int64_t(t.nbytes());
        return t.to(torch::kCPU);
    };
    auto use = [&](const torch::Tensor& t) {
        if (!on_host) return t;
        totals.boundary_bytes_up += int64_t(t.nbytes());
        return t.to(p.device);
    };

    // The forward: the embedding, then each block, over every micro-batch.
    for (int64_t u = 0; u < head; ++u) {
        layout.holdUnit(u, /*backward=*/false);
        for (int64_t k = 0; k < K; ++k) {
            ComputeScope precision(p.device.type(), p.precision);
            torch::NoGradGuard no_graph;
            inputs[u + 1][k] = keep(u == 0 ? model->embedTokens(tokens[k]) : model->blockForward(u, use(inputs[u][k]), auxes[u][k]));
        }
        layout.releaseUnit(u);
    }
    // The head: each micro-batch's forward and backward at once.
    std::vector<torch::Tensor> grad_in(K);  // the gradient of the current unit's output, per micro-batch
    std::vector<std::vector<torch::Tensor>> grad_aux(U, std::vector<torch::Tensor>(K));
    std::vector<torch::Tensor> counts(K);
    std::vector<torch::Tensor> grad_embedded(K);  // the modules' gradient of the embeddings
    if (p.fresh_norms) p.fresh_norms->useRows(K);
    layout.holdUnit(head, /*backward=*/false);
    for (int64_t k = 0; k < K; ++k) {
        layout.beginUnitMicroBatch(head, k + 1 == K);
        if (p.fresh_norms) p.fresh_norms->selectRow(k);
        torch::Tensor h = use(inputs[head][k]).detach().requires_grad_(true);
        // The multi-token-prediction modules read the embeddings too (unit 1's input).
        torch::Tensor embedded;
        if (mtp_weights.defined()) embedded = use(inputs[1][k]).detach().requires_grad_(true);
        std::vector<torch::Tensor> aux_leaves(U);
        std::vector<torch::Tensor> block_auxes;
        for (int64_t u = 1; u < head; ++u)
            if (auxes[u][k].defined()) {
                aux_leaves[u] = auxes[u][k].detach().requires_grad_(true);
                block_auxes.push_back(aux_leaves[u]);
            }
        LossParts parts = [&] {
            ComputeScope precision(p.device.type(), p.precision);  // the forward only, as loss() runs
            return model->headLoss(h, embedded, targets[k], block_auxes);
        }();
        trainingObjective(parts, mtp_weights).backward();
        grad_in[k] = h.grad();
        if (mtp_weights.defined()) grad_embedded[k] = embedded.grad();
        for (int64_t u = 1; u < head; ++u)
            if (aux_leaves[u].defined()) grad_aux[u][k] = aux_leaves[u].grad();
        inputs[head][k] = torch::Tensor();
        counts[k] = parts.token_count;
        totals.loss_sum += parts.token_loss_sum.detach().to(torch::kFloat64);
        totals.aux_sum += parts.aux_loss_sum.detach().to(torch::kFloat64);
        if (parts.mtp_loss_sums.defined()) totals.mtp_sums += parts.mtp_loss_sums.detach().to(torch::kFloat64);
        totals.count += parts.token_count;
        layout.endUnitMicroBatch();
    }
    layout.releaseUnit(head);
    // The blocks, last first, each recomputed from its kept input.
    for (int64_t u = head - 1; u >= 1; --u) {
        layout.holdUnit(u, /*backward=*/true);
        for (int64_t k = 0; k < K; ++k) {
            layout.beginUnitMicroBatch(u, k + 1 == K);
            if (p.fresh_norms) p.fresh_norms->selectRow(k);
            grad_in[k] = model->blockBackward(u, use(inputs[u][k]), grad_in[k], grad_aux[u][k], p.precision);
            inputs[u][k] = torch::Tensor();
            grad_aux[u][k] = torch::Tensor();
            layout.endUnitMicroBatch();
        }
        layout.releaseUnit(u);
    }
    // The embedding: its gradient is a scatter of the incoming one by token id.
    layout.holdUnit(0, /*backward=*/true);
    for (int64_t k = 0; k < K; ++k) {
        layout.beginUnitMicroBatch(0, k + 1 == K);
        if (p.fresh_norms) p.fresh_norms->selectRow(k);
        // The embeddings' two uses (block 1 and the modules) summed, as autograd's buffer does.
        if (grad_embedded[k].defined()) grad_in[k] = grad_embedded[k] + grad_in[k];
        model->embeddingBackward(tokens[k], grad_in[k]);
        grad_embedded[k] = torch::Tensor();
        grad_in[k] = torch::Tensor();
        layout.endUnitMicroBatch();
    }
    layout.releaseUnit(0);
    if (p.fresh_norms) p.fresh_norms->endRows(counts);
    layout.closeUnits();
    return true;
}

}  // namespace trainbench
