// Self-speculative greedy decoding with the first multi-token-prediction module.
#include "generate/speculative_decoding.h"

#include <chrono>
#include <stdexcept>

#include "generate/decode_clock.h"

namespace trainbench {
namespace {

torch::Tensor row(const std::vector<int64_t>& ids, const torch::Device& device) {
    return torch::tensor(ids, torch::kInt64).view({1, -1}).to(device);
}

}  // namespace

std::vector<Generation> generateSpeculatively(Transformer& model, const std::vector<std::vector<int64_t>>& prompts,
                                              const GenerationOptions& o, GenerationTiming* timing) {
    if (model->mtpDepth() < 1)
        throw std::invalid_argument("speculative decoding drafts with a multi-token-prediction module, and "
                                    "model.n_mtp_depth is 0; train with model.n_mtp_depth 1 or decode without it");
    if (o.sampling.temperature != 0)
        throw std::invalid_argument("speculative decoding keeps greedy decoding's tokens only: use temperature 0");
    checkPrompts(model->config(), prompts, o.max_new_tokens);
    torch::NoGradGuard no_grad;
    const bool was_training = model->is_training();
    model->eval();
    const auto device = model->parameters().front().device();
    std::vector<Generation> out(prompts.size());
    GenerationTiming spent;
    for (size_t i = 0; i < prompts.size(); ++i) {
        const std::vector<int64_t>& prompt = prompts[i];
        const int64_t n = static_cast<int64_t>(prompt.size());
        Generation& g = out[i];
        if (o.max_new_tokens <= 0) continue;
        auto emit = [&](const torch::Tensor& logits) {  // logits [V] of the position before the token
            const int64_t token = logits.argmax().item<int64_t>();
            g.tokens.push_back(token);
            g.logprobs.push_back(logits.to(torch::kFloat64).log_softmax(0)[token].item<double>());
            g.ended = token == o.end_token;
            return token;
        };
        auto done = [&] { return g.ended || int64_t(g.tokens.size()) >= o.max_new_tokens; };
        KvCache cache = model->newCache(1, o.form);
        // Prefill: the main model over the prompt, then the module over its positions 0..n-2
        // (hidden state i with token i + 1), so its attention has the prompt's past.
        auto start = std::chrono::steady_clock::now();
        torch::Tensor hidden;
        const torch::Tensor logits = model->decode(row(prompt, device), cache, {0}, {0}, TransformerImpl::LogitRows::All, &hidden);
        if (n > 1) {
            std::vector<int64_t> following(prompt.begin() + 1, prompt.end());
            model->decodeMtp(0, row(following, device), hidden.narrow(1, 0, n - 1), cache, {0}, {0});
        }
        int64_t next = emit(logits[0][n - 1]);
        spent.prefill_tokens += n;
        spent.prefill_seconds += secondsSince(start);
        start = std::chrono::steady_clock::now();
        // The module's inputs not yet in its cache: hidden states from position `from` on, each
        // with the token after it.
        int64_t position = n;  // where `next` goes in the main cache
        torch::Tensor pending_hidden = hidden.narrow(1, n - 1, 1);
        std::vector<int64_t> pending_tokens{next};
        while (!done()) {
            const int64_t from = position - static_cast<int64_t>(pending_tokens.size());
            const torch::Tensor draft_logits =
                model->decodeMtp(0, row(pending_tokens, device), pending_hidden, cache, {0}, {from});
            const int64_t draft = draft_logits[0][draft_logits.size(1) - 1].argmax().item<int64_t>();
            torch::Tensor verified_hidden;
            const torch::Tensor verified =
                model->decode(row({next, draft}, device), cache, {0}, {position}, TransformerImpl::LogitRows::All,
                              &verified_hidden);
            ++spent.forwards;
            ++spent.drafted;
            const int64_t truth = emit(verified[0][0]);
            if (truth == draft && !done()) {
                ++spent.accepted;
                next = emit(verified[0][1]);
                pending_hidden = verified_hidden;
                pending_tokens = {draft, next};
                position += 2;
            } else {
                if (truth == draft) ++spent.accepted;  // right, but the last token allowed
                next = truth;
                pending_hidden = verified_hidden.narrow(1, 0, 1);
                pending_tokens = {truth};
                position += 1;
            }
        }
        spent.decode_tokens += static_cast<int64_t>(g.tokens.size()) - 1;
        spent.decode_seconds += secondsSince(start);
    }
    if (was_training) model->train();
    if (timing) *timing = spent;
    return out;
}

}  // namespace trainbench
