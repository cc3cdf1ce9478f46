// MtpModule: one multi-token-prediction module of DeepSeek-V3 (technical report, section 2.2).
#pragma once

#include <string>

#include <torch/torch.h>

#include "model/transformer_block.h"

namespace trainbench {

// Module k (1-based) of D: at position i it joins the previous depth's hidden state h_i^{k-1}
// (the main model's last block output for k = 1) with the embedding of token t_{i+k},
//   h'_i = eh_proj([enorm(Emb(t_{i+k})); hnorm(h_i^{k-1})]),
// runs one transformer block of the model's kind on positions 0 .. T-k-1 (causal, the same
// rotary positions), and its own final norm feeds the shared output head, which predicts the
// token t_{i+k+1}. The concatenation puts the embedding first: the published checkpoint's
// eh_proj [d, 2d] is read so by the inference engines that draft with it (vLLM's and SGLang's
// deepseek_mtp), while the report's formula writes the hidden state first; the weights decide.
//
// The module is a block (its attention and feed-forward parts under the block's names, so the
// block's recomputation, expert parallelism and name mapping apply unchanged) with four more
// weights: enorm, hnorm, eh_proj and norm (published: shared_head.norm).
class MtpModuleImpl : public BlockImpl {
public:
    // `layer`: its index in the published numbering (model.n_layers + k - 1): a block of the
    // model's kind there (MoE unless every layer is dense).
    MtpModuleImpl(int64_t layer, const ModelConfig& config);
    // h' of the embeddings e [B, S, d] (of tokens t_{i+k}) and hidden states h [B, S, d].
    torch::Tensor join(const torch::Tensor& e, const torch::Tensor& h);
    // The module's final norm (then the shared head).
    torch::Tensor finalNorm(const torch::Tensor& h) { return norm(h); }

private:
    RMSNorm enorm{nullptr}, hnorm{nullptr}, norm{nullptr};
    torch::nn::Linear eh_proj{nullptr};
};
TORCH_MODULE(MtpModule);

// The state-dict names of module j (0-based) are "mtp.<j>.<part>"; the published checkpoint
// numbers the modules after the main model's layers. This is the name with "layers.<n_layers +
// j>." in place of "mtp.<j>." (any other name unchanged), for the name tables of the interop and
// the per-layer groupings.
std::string mtpLayerName(const std::string& name, int64_t n_layers);

// The targets of depth k (1-based) for the targets [B, T] of a micro-batch: position i predicts
// targets[i + k] (the token k + 1 after token i), so depth k has T - k positions, each counted
// where that target is (prompt tokens, padding and ignored positions stay uncounted).
torch::Tensor mtpTargets(const torch::Tensor& targets, int64_t k);

// The counted targets of a micro-batch [1 + D] int64 on the host: the main loss's, then each
// depth's (what the window's MTP weights are made of before its first backward).
torch::Tensor mtpTargetCounts(const torch::Tensor& targets, int64_t depth);

}  // namespace trainbench
