// FreshGradientNorms: each micro-batch's own gradient, squared and summed per parameter group,
// as autograd makes it (the small-batch half of the noise scale, docs/design/noise_scale.md section 2).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/transformer.h"

namespace trainbench {

// The parameter groups the noise scale is also reported for.
const std::vector<std::string>& noiseScaleGroups();  // attention, dense_mlp, experts, embeddings
// The group of each parameter (model->parameters()'s order): attention (a block's attention and
// its norm), dense_mlp (a dense block's MLP and its norm), experts (an MoE's gate, routed and
// shared experts and its norm), embeddings (the embedding, the head and the final norm).
std::vector<int> noiseScaleGroupsOf(Transformer& model);

// A hook on every parameter sees the gradient one micro-batch's backward produced for it,
// before it is added to what earlier micro-batches left (every use in the graph summed, so the
// same at every ZeRO stage and with recomputation). The hooks hold those gradients until about
// kPendingBytes of them are held or the micro-batch ends, and then their squared norms go into
// the groups' device accumulators in a few calls (one norm over the list, one index_add): a
// dozen operators a micro-batch where a norm per parameter made hundreds, and at most
// kPendingBytes kept beyond autograd's own. No host synchronisation. At the micro-batch's end that is divided by the
// micro-batch's token count n_k and added to the window's sums, and micro-batches with any
// counted targets are counted.
//
// Under expert parallelism (`routed` marks the routed experts' parameters) a rank's routed
// gradient of micro-batch k holds the tokens of micro-batch k of every rank of its expert group:
// those parameters' squared norms are kept per micro-batch instead ([K], with the rank's token
// counts), for the trainer to combine over the group (routedWindow).
class FreshGradientNorms {
public:
    FreshGradientNorms(const std::vector<torch::Tensor>& params, const std::vector<int>& group_of_param,
                       const torch::Device& device, const std::vector<char>& routed = {});
    ~FreshGradientNorms();
    FreshGradientNorms(const FreshGradientNorms&) = delete;
    FreshGradientNorms& operator=(const FreshGradientNorms&) = delete;

    // `micro_batches`: the window's K (the routed parameters' per-micro-batch slots).
    void beginWindow(int64_t micro_batches = 0);
    void beginMicroBatch();
    // `token_count`: the micro-batch's counted targets (a device scalar).
    void endMicroBatch(const torch::Tensor& token_count);
    // The unit-major window (runtime.window_schedule unit), where micro-batches' gradients come
    // interleaved: useRows(K) at its start gives each micro-batch a row of its own;
    // selectRow(k) before each piece of micro-batch k's backward sends what the hooks see there;
    // endRows(token counts) at the end does each row's endMicroBatch in order k = 0..K-1. Each
    // row receives its micro-batch's gradients in the order the micro-batch order makes them
    // (head, blocks last first, embedding), so on the CPU, where each gradient's squares are
    // added to its slot one by one, the sums are the same bit for bit; on a GPU the pending
    // lists flush in other groups, and index_add_'s atomics were not deterministic anyway.
    void useRows(int64_t micro_batches);
    void selectRow(int64_t k);
    void endRows(const std::vector<torch::Tensor>& token_counts);
    // fp64 [groups + 1] on the device: per group sum_k |s_k|^2 / n_k, then the micro-batches with
    // n_k > 0. Summed over ranks, these are NoiseScaleSums' fresh_sq_per_token and micro_batches.
    torch::Tensor windowSums() const { return window_; }
    // Expert parallelism: fp64 [2K] on the device, the routed parameters' squared norm of each
    // micro-batch's gradient, then this rank's token count of each micro-batch.
    torch::Tensor routedWindow() const { return torch::cat({routed_k_, tokens_k_}); }
    bool hasRouted() const { return has_routed_; }

    static constexpr int64_t kPendingBytes = 1 << 20;

private:
    void flush();  // the pending gradients' squared norms into micro_all_

    std::vector<torch::Tensor> params_;
    std::vector<unsigned> hooks_;
    void pointAt(const torch::Tensor& row);  // micro_all_ and its views onto `row`
    torch::Tensor micro_all_;  // [groups + 1]: micro_, then micro_routed_
    torch::Tensor own_;        // micro_all_'s buffer outside the unit-major window
    torch::Tensor rows_;       // [K, groups + 1]: useRows' rows
    torch::Tensor micro_;   // [groups], this micro-batch's squared norms
    torch::Tensor window_;  // [groups + 1]
    bool has_routed_ = false;
    torch::Tensor micro_routed_;        // [1]: the routed parameters' share of this micro-batch
    torch::Tensor routed_k_, tokens_k_;  // [K] each
    int64_t micro_index_ = 0;
    std::mutex pending_mutex_;  // autograd may run hooks on its own threads
    std::vector<torch::Tensor> pending_;
    std::vector<int64_t> pending_slot_;  // each pending gradient's index into micro_all_
    int64_t pending_bytes_ = 0;
};

}  // namespace trainbench
