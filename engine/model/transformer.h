// The DeepSeek-style transformer: embedding, MLA + (dense | MoE) blocks, final norm, untied head.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "kernels/compute_scope.h"
#include "model/moe.h"
#include "model/rms_norm.h"
#include "model/rotary.h"
#include "model/transformer_block.h"
#include "model/weight_residency.h"
#include "trainbench/run_config.h"

namespace trainbench {

class MtpModuleImpl;

// Target id that does not count (padding, cross-document positions).
constexpr int64_t kIgnoreIndex = -1;

// One micro-batch's loss in the form the trainer normalises (docs/design/accumulation.md):
// the raw sum over counted targets and their count, never a mean.
struct LossParts {
    torch::Tensor token_loss_sum;  // scalar: summed cross-entropy over counted targets
    torch::Tensor token_count;     // scalar int64: counted targets
    // scalar: sum over sequences of (counted targets * balance loss), the multi-token-prediction
    // modules' MoE blocks included; 0 if none
    torch::Tensor aux_loss_sum;
    // model.n_mtp_depth D > 0: per depth k = 1..D, the summed cross-entropy of its counted targets
    // ([D], the token loss's dtype) and their count ([D] int64); undefined without.
    torch::Tensor mtp_loss_sums;
    torch::Tensor mtp_token_counts;
};

// What a micro-batch's backward starts from: the token and balance loss sums, plus the depths'
// sums each weighted by `mtp_weights` [D] (fp64, the window's lambda / D x N / N_k, so that
// the window's gradient sum divided by N is that of L_main + lambda / D x sum_k L_k; the
// trainer's WindowWork::mtp_weights). Without a module: token + aux, as before.
torch::Tensor trainingObjective(const LossParts& parts, const torch::Tensor& mtp_weights);

class TransformerImpl : public torch::nn::Module {
public:
    explicit TransformerImpl(const ModelConfig& config);
    torch::Tensor forward(const torch::Tensor& tokens);  // [B, T] int64 -> logits [B, T, V]
    // targets [B, T]; `with_mtp` false leaves the multi-token-prediction modules out (evaluation:
    // the main loss only).
    LossParts loss(const torch::Tensor& tokens, const torch::Tensor& targets, bool with_mtp = true);
    // An empty cache for `rows` sequences of up to model.max_seq_len tokens.
    KvCache newCache(int64_t rows, CacheForm form) const;
    // Logits [B, T, V] of tokens [B, T] continuing cache rows `rows` at positions `starts`
    // (model/kv_cache.h), their keys and values added to the cache; with LogitRows::Last those
    // of each row's last position only, [B, 1, V] (a prompt's prefill: the head over one
    // position, not T). No gradients; whole weights.
    // `hidden` (when given) gets the last block's output of the positions the logits are of: what
    // a multi-token-prediction module drafts from. The cache has a layer per block and one per
    // module (decodeMtp).
    enum class LogitRows { All, Last };
    torch::Tensor decode(const torch::Tensor& tokens, KvCache& cache, const std::vector<int64_t>& rows,
                         const std::vector<int64_t>& starts, LogitRows logit_rows = LogitRows::All,
                         torch::Tensor* hidden = nullptr);
    // Module k's (0-based) decoding step: logits [B, T, V] for positions `starts` .. of cache rows
    // `rows` whose previous-depth hidden states are `previous` [B, T, d] and whose next tokens
    // (t_{i+k+1}) are `next_tokens` [B, T]; its keys and values go to the module's cache layer;
    // `hidden` (when given) gets its output, module k + 1's input. No gradients; whole weights.
    torch::Tensor decodeMtp(int64_t k, const torch::Tensor& next_tokens, const torch::Tensor& previous, KvCache& cache,
                            const std::vector<int64_t>& rows, const std::vector<int64_t>& starts,
                            torch::Tensor* hidden = nullptr);
    // The last block's output [B, T, d] and the embeddings [B, T, d] of tokens, without a graph
    // and with whole weights: where the modules start from.
    std::pair<torch::Tensor, torch::Tensor> trunk(const torch::Tensor& tokens);
    // Module k (0-based, k < mtpDepth()).
    MtpModuleImpl& mtpModule(int64_t k);

    const ModelConfig& config() const { return config_; }
    // Recomputation (runtime.activation_checkpointing): "full" keeps only each block's input for
    // the backward and runs the block's forward again there; "feedforward" does so for each
    // block's feed-forward part (the MoE's gate, experts and shared experts, or the dense MLP);
    // "none" keeps everything. Training with gradients only.
    void setRecomputation(Recomputation mode) { recomputation_ = mode; }
    // runtime.head_chunk_tokens: the losses' head in chunks of tokens (trainbench/head_chunk.h:
    // nullopt the rule, 0 the whole logits at once). forward() and decode() always make whole
    // logits: they return them.
    void setHeadChunkTokens(std::optional<int64_t> tokens) { head_chunk_tokens_ = tokens; }
    // The units weights are gathered and released in (model/weight_residency.h), in forward order:
    // the embedding, each block, the final norm with the head and the multi-token-prediction
    // modules (they read the head and run after it). Every parameter is in one unit.
    std::vector<std::vector<torch::Tensor>> units() const;
    // Whether a unit's backward reads its weights: the embedding's does not (its gradient is a
    // scatter of the incoming one by token id), so it is not gathered again there.
    static bool unitReadsWeightsInBackward(int64_t unit) { return unit != 0; }
    // nullptr: every weight always whole (stages 0-2).
    void setWeightResidency(WeightResidency* residency);
    // The unit-major window (train/unit_order.cpp) runs the units one at a time over
    // every micro-batch of a window; these are the pieces of loss() it runs, each computing
    // exactly what loss() computes there with activation_checkpointing full (bitwise: the same
    // operators on the same inputs). Unit 0 is the embedding, 1..L the blocks, L + 1 the head.
    int64_t unitCount() const { return static_cast<int64_t>(layers->size()) + 2; }
    // The embedding of tokens [B, T] (its graph kept when gradients are on).
    torch::Tensor embedTokens(const torch::Tensor& tokens) { return embed(tokens); }
    // The embedding's backward for tokens [B, T] and the gradient of their embeddings: its
    // weight's gradient accumulated as the forward's graph would, without reading the weight
    // (model/embedding_backward.cpp).
    void embeddingBackward(const torch::Tensor& tokens, const torch::Tensor& grad);
    // Block `unit`'s forward without a graph, as a recomputed block's first forward runs;
    // `aux` gets its balance loss per sequence (undefined for a dense block).
    torch::Tensor blockForward(int64_t unit, const torch::Tensor& x, torch::Tensor& aux);
    // Block `unit`'s backward from its input `x` and the gradients of its outputs (`grad_aux`
    // undefined where it has no balance loss): its forward again with a graph, its parameters'
    // gradients accumulated; returns the gradient of `x`.
    torch::Tensor blockBackward(int64_t unit, const torch::Tensor& x, const torch::Tensor& grad_y,
                                const torch::Tensor& grad_aux, ComputePrecision precision);
    // The head's loss of the last block's output `h` with a graph: the final norm, the head and
    // the loss as loss() makes them, the blocks' balance losses `auxes` (block order, those
    // defined) summed into the sequence loss in loss()'s order; with modules, their losses from
    // `h` and the embeddings `embedded` (unit 0's output).
    LossParts headLoss(const torch::Tensor& h, const torch::Tensor& embedded, const torch::Tensor& targets,
                       const std::vector<torch::Tensor>& auxes);
    // model.n_mtp_depth.
    int64_t mtpDepth() const { return mtp ? static_cast<int64_t>(mtp->size()) : 0; }
    // MoE layers in block order (empty for an all-dense model).
    std::vector<MoE> moeLayers() const;
    // Index of each MoE layer in the block list, parallel to moeLayers().
    std::vector<int64_t> moeLayerIndices() const;

private:
    ModelConfig config_;
    Recomputation recomputation_ = Recomputation::None;
    WeightResidency* residency_ = nullptr;
    std::optional<int64_t> head_chunk_tokens_;
    // The last block's output [B, T, d] of tokens, the blocks' balance losses summed into seq_aux,
    // each unit's weights gathered around its forward (units 0..L).
    // `embedded` gets the embeddings (unit 0's output).
    torch::Tensor hiddenStates(const torch::Tensor& tokens, torch::Tensor& seq_aux, torch::Tensor& embedded);
    // A block's forward as training runs it: whole, or recomputed (runtime.activation_checkpointing).
    torch::Tensor blockStep(BlockImpl& block, const torch::Tensor& x, torch::Tensor& aux);
    // The residency's brackets of a unit's forward; leaveUnit puts a boundary on its outputs
    // that brings the weights back for its backward.
    void enterUnit(int64_t unit);
    torch::autograd::variable_list leaveUnit(int64_t unit, torch::autograd::variable_list outputs);
    // The final norm, the head and the summed losses of the last block's output h (loss() and
    // headLoss()): chunked (runtime.head_chunk_tokens) or through the whole logits.
    // With modules: their losses too (from `h` and `embedded`), and `mtp_aux_sum` their blocks'
    // balance loss sum, kept apart from parts.aux_loss_sum so that it can pass the head's boundary.
    LossParts headParts(const torch::Tensor& h, const torch::Tensor& embedded, const torch::Tensor& targets,
                        const torch::Tensor& seq_aux, bool with_mtp, torch::Tensor& mtp_aux_sum);
    // The summed cross-entropy of the shared head over normed hidden states x [..., d] and their
    // targets: chunked (runtime.head_chunk_tokens) or through the whole logits.
    torch::Tensor headLossSum(const torch::Tensor& x, const torch::Tensor& targets);
    // The depths' losses into parts (mtp_loss_sums, mtp_token_counts), their blocks' balance losses
    // per sequence into mtp_aux.
    void mtpLosses(const torch::Tensor& h, const torch::Tensor& embedded, const torch::Tensor& targets,
                   LossParts& parts, torch::Tensor& mtp_aux);
    std::unique_ptr<RotaryTable> rotary_;
    torch::nn::Embedding embed{nullptr};
    torch::nn::ModuleList layers{nullptr};
    RMSNorm norm{nullptr};
    torch::nn::Linear head{nullptr};
    torch::nn::ModuleList mtp{nullptr};  // MtpModule, D of them; null when D = 0
};
TORCH_MODULE(Transformer);

// Reference initialisation: normal(0, init_std) for weights, ones for norms, zeros for gate
// biases; deterministic from the seed (drawn on the CPU, so every device gets the same weights).
void initializeWeights(Transformer& model, uint64_t seed);

// Parameters and persistent buffers under their reference state-dict names, in module order.
std::vector<std::pair<std::string, torch::Tensor>> stateDict(const Transformer& model);

}  // namespace trainbench
