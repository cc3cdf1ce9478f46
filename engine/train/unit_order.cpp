// The unit-major window: forwards unit by unit over the micro-batches, backwards likewise.
#include "train/unit_order.h"

#include <vector>

#include "kernels/compute_scope.h"
#include "memory/host_to_device.h"
#include "offload/boundary_file.h"

namespace trainbench {

UnitOrder::UnitOrder() = default;
UnitOrder::~UnitOrder() = default;

BoundaryFile* UnitOrder::boundaryFile(const WindowParts& p, int64_t slots, const std::vector<torch::Tensor>& tokens) {
    // Every boundary is one [m, T, d] in the activations' dtype (fp32 here; bf16 under autocast
    // on a GPU is smaller): the micro-batches' largest in fp32 bounds them all.
    int64_t largest = 0;
    for (const auto& t : tokens) largest = std::max<int64_t>(largest, t.numel() * p.model->config().dim * int64_t(sizeof(float)));
    if (!file_ || !file_->holds(slots, largest)) {
        file_.reset();  // its file goes before the new one takes the name
        file_ = std::make_unique<BoundaryFile>(p.boundary_file, slots, largest);
    }
    return file_.get();
}

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
    // kept[r][k]: what waits for micro-batch k from one unit to the next: for r = 1..head unit r's
    // input (the boundary activations); r = handed, the gradient of the output of the unit whose
    // backward comes next; r = embeddings, the modules' gradient of the embeddings (until the
    // embedding's backward). auxes[u][k]: block u's balance loss per sequence (undefined for a
    // dense block).
    const int64_t handed = head + 1, embeddings = head + 2;
    std::vector<std::vector<torch::Tensor>> kept(head + 3, std::vector<torch::Tensor>(K));
    std::vector<std::vector<torch::Tensor>> auxes(U, std::vector<torch::Tensor>(K));
    // Placement::boundaries Host: all of them wait in host memory (a GPU's: a copy down when
    // made and one up for each use, the same bits), so that nothing the window's length
    // multiplies stays on the device. File: in offload_dir's scratch file, written once and read
    // back for each use (an input: the next unit's forward, its own backward, the head's modules
    // for unit 1's; a gradient: the backward of the unit below).
    const bool on_host = p.boundaries == Tier::Host && !p.device.is_cpu();
    BoundaryFile* file = p.boundaries == Tier::File ? boundaryFile(p, K * embeddings, tokens) : nullptr;
    auto slot = [&](int64_t r, int64_t k) { return (r - 1) * K + k; };
    auto keep = [&](int64_t r, int64_t k, torch::Tensor t) {
        if (file) {
            file->put(slot(r, k), t);
            totals.boundary_bytes_written += int64_t(t.nbytes());
            if (!p.device.is_cpu()) totals.boundary_bytes_down += int64_t(t.nbytes());  // through host memory
            return;
        }
        if (on_host) {
            totals.boundary_bytes_down += int64_t(t.nbytes());
            t = t.to(torch::kCPU);
        }
        kept[r][k] = std::move(t);
    };
    auto use = [&](int64_t r, int64_t k) {
        if (file) {
            torch::Tensor t = file->get(slot(r, k), p.device);
            totals.boundary_bytes_read += int64_t(t.nbytes());
            if (!p.device.is_cpu()) totals.boundary_bytes_up += int64_t(t.nbytes());
            return t;
        }
        if (!on_host) return kept[r][k];
        totals.boundary_bytes_up += int64_t(kept[r][k].nbytes());
        return kept[r][k].to(p.device);
    };

    // The forward: the embedding, then each block, over every micro-batch.
    for (int64_t u = 0; u < head; ++u) {
        layout.holdUnit(u, /*backward=*/false);
        for (int64_t k = 0; k < K; ++k) {
            ComputeScope precision(p.device.type(), p.precision);
            torch::NoGradGuard no_graph;
            keep(u + 1, k, u == 0 ? model->embedTokens(tokens[k]) : model->blockForward(u, use(u, k), auxes[u][k]));
        }
        layout.releaseUnit(u);
    }
    // The head: each micro-batch's forward and backward at once.
    std::vector<std::vector<torch::Tensor>> grad_aux(U, std::vector<torch::Tensor>(K));
    std::vector<torch::Tensor> counts(K);
    std::vector<bool> modules_read_embeddings(K, false);
    if (p.fresh_norms) p.fresh_norms->useRows(K);
    layout.holdUnit(head, /*backward=*/false);
    for (int64_t k = 0; k < K; ++k) {
        layout.beginUnitMicroBatch(head, k + 1 == K);
        if (p.fresh_norms) p.fresh_norms->selectRow(k);
        torch::Tensor h = use(head, k).detach().requires_grad_(true);
        // The multi-token-prediction modules read the embeddings too (unit 1's input).
        torch::Tensor embedded;
        if (mtp_weights.defined()) embedded = use(1, k).detach().requires_grad_(true);
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
        keep(handed, k, h.grad());
        if (mtp_weights.defined() && embedded.grad().defined()) {
            keep(embeddings, k, embedded.grad());
            modules_read_embeddings[k] = true;
        }
        for (int64_t u = 1; u < head; ++u)
            if (aux_leaves[u].defined()) grad_aux[u][k] = aux_leaves[u].grad();
        kept[head][k] = torch::Tensor();
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
            keep(handed, k, model->blockBackward(u, use(u, k), use(handed, k), grad_aux[u][k], p.precision));
            kept[u][k] = torch::Tensor();
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
        torch::Tensor grad = use(handed, k);
        if (modules_read_embeddings[k]) grad = use(embeddings, k) + grad;
        model->embeddingBackward(tokens[k], grad);
        kept[handed][k] = kept[embeddings][k] = torch::Tensor();
        layout.endUnitMicroBatch();
    }
    layout.releaseUnit(0);
    if (p.fresh_norms) p.fresh_norms->endRows(counts);
    layout.closeUnits();
    return true;
}

}  // namespace trainbench
