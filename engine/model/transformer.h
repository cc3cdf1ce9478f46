// The DeepSeek-style transformer: embedding, MLA + (dense | MoE) blocks, final norm, untied head.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "kernels/compute_scope.h"
#include "model/mla_attention.h"
#include "model/mlp.h"
#include "model/moe.h"
#include "model/rms_norm.h"
#include "model/rotary.h"
#include "model/weight_residency.h"
#include "trainbench/run_config.h"

namespace trainbench {

// Target id that does not count (padding, cross-document positions).
constexpr int64_t kIgnoreIndex = -1;

// One micro-batch's loss in the form the trainer normalises (docs/design/accumulation.md):
// the raw sum over counted targets and their count, never a mean.
struct LossParts {
    torch::Tensor token_loss_sum;  // scalar: summed cross-entropy over counted targets
    torch::Tensor token_count;     // scalar int64: counted targets
    torch::Tensor aux_loss_sum;    // scalar: sum over sequences of (counted targets * balance loss); 0 if none
};

class BlockImpl : public torch::nn::Module {
public:
    BlockImpl(int64_t layer, const ModelConfig& config);
    // x: [B, T, d]; seq_aux accumulates the MoE balance loss per sequence ([B]) when defined.
    torch::Tensor forward(const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux);
    // The parts the forward is made of: the attention sub-block h = x + attn(attn_norm(x)), and
    // the feed-forward one y = h + ffn(ffn_norm(h)) (dense or MoE).
    enum class Part { Whole, Attention, FeedForward };
    torch::Tensor forwardPart(Part part, const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux);
    // A part that keeps only its input for the backward, which runs the part's forward again
    // (runtime.activation_checkpointing "full": the whole block; "feedforward": the dense MLP or
    // the MoE, attention keeping its activations; model/block_recomputation.cpp).
    torch::Tensor recomputedForward(Part part, const torch::Tensor& x, RotaryTable& rotary, torch::Tensor& seq_aux);
    // The backward of such a part: its forward again from input `x` with gradients on (the
    // active compute precision, loads not counted twice), back-propagated from `grad_y` and
    // `grad_aux` (either may be undefined); the parameters' gradients accumulate, and the
    // gradient of `x` is returned. `precision`: the first forward's.
    torch::Tensor recomputedBackward(Part part, const torch::Tensor& x, RotaryTable& rotary, const torch::Tensor& grad_y,
                                     const torch::Tensor& grad_aux, ComputePrecision precision);
    // Decoding with the attention cache (MLAAttentionImpl::decode); no gradients.
    torch::Tensor decode(const torch::Tensor& x, RotaryTable& rotary, KvCache& cache, LayerCache& layer,
                         const std::vector<int64_t>& rows, const std::vector<int64_t>& starts);
    // With sharded weights (runtime.zero_stage 3): the residency that holds them, and this
    // block's unit (its recomputed backward asks for the weights first).
    void residesIn(WeightResidency* residency, int64_t unit) { residency_ = residency, unit_ = unit; }
    WeightResidency* residency() const { return residency_; }
    int64_t unit() const { return unit_; }
    MoE moe() const { return moe_; }

private:
    RMSNorm attn_norm{nullptr}, ffn_norm{nullptr};
    MLAAttention attn{nullptr};
    MLP dense_{nullptr};
    MoE moe_{nullptr};
    WeightResidency* residency_ = nullptr;
    int64_t unit_ = 0;
};
TORCH_MODULE(Block);

class TransformerImpl : public torch::nn::Module {
public:
    explicit TransformerImpl(const ModelConfig& config);
    torch::Tensor forward(const torch::Tensor& tokens);  // [B, T] int64 -> logits [B, T, V]
    LossParts loss(const torch::Tensor& tokens, const torch::Tensor& targets);  // targets [B, T]
    // An empty cache for `rows` sequences of up to model.max_seq_len tokens.
    KvCache newCache(int64_t rows, CacheForm form) const;
    // Logits [B, T, V] of tokens [B, T] continuing cache rows `rows` at positions `starts`
    // (model/kv_cache.h), their keys and values added to the cache; with LogitRows::Last those
    // of each row's last position only, [B, 1, V] (a prompt's prefill: the head over one
    // position, not T). No gradients; whole weights.
    enum class LogitRows { All, Last };
    torch::Tensor decode(const torch::Tensor& tokens, KvCache& cache, const std::vector<int64_t>& rows,
                         const std::vector<int64_t>& starts, LogitRows logit_rows = LogitRows::All);

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
    // the embedding, each block, the final norm with the head. Every parameter is in one unit.
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
    // defined) summed into the sequence loss in loss()'s order.
    LossParts headLoss(const torch::Tensor& h, const torch::Tensor& targets, const std::vector<torch::Tensor>& auxes);
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
    torch::Tensor hiddenStates(const torch::Tensor& tokens, torch::Tensor& seq_aux);
    // The residency's brackets of a unit's forward; leaveUnit puts a boundary on its outputs
    // that brings the weights back for its backward.
    void enterUnit(int64_t unit);
    torch::autograd::variable_list leaveUnit(int64_t unit, torch::autograd::variable_list outputs);
    // The final norm, the head and the summed losses of the last block's output h (loss() and
    // headLoss()): chunked (runtime.head_chunk_tokens) or through the whole logits.
    LossParts headParts(const torch::Tensor& h, const torch::Tensor& targets, const torch::Tensor& seq_aux);
    std::unique_ptr<RotaryTable> rotary_;
    torch::nn::Embedding embed{nullptr};
    torch::nn::ModuleList layers{nullptr};
    RMSNorm norm{nullptr};
    torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Transformer);

// Reference initialisation: normal(0, init_std) for weights, ones for norms, zeros for gate
// biases; deterministic from the seed (drawn on the CPU, so every device gets the same weights).
void initializeWeights(Transformer& model, uint64_t seed);

// Parameters and persistent buffers under their reference state-dict names, in module order.
std::vector<std::pair<std::string, torch::Tensor>> stateDict(const Transformer& model);

}  // namespace trainbench
