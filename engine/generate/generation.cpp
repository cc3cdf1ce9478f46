#include "generate/generation.h"

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

#include "generate/decode_clock.h"
#include "generate/speculative_decoding.h"

namespace trainbench {

void checkPrompts(const ModelConfig& c, const std::vector<std::vector<int64_t>>& prompts, int64_t max_new_tokens) {
    for (size_t i = 0; i < prompts.size(); ++i) {
        const std::string which = "prompt " + std::to_string(i + 1);
        if (prompts[i].empty()) throw std::invalid_argument(which + " is empty; give it at least one token");
        for (int64_t id : prompts[i])
            if (id < 0 || id >= c.vocab_size)
                throw std::invalid_argument(which + " has token " + std::to_string(id) + ", outside model.vocab_size " +
                                            std::to_string(c.vocab_size));
        if (int64_t(prompts[i].size()) + max_new_tokens > c.max_seq_len)
            throw std::invalid_argument(which + " (" + std::to_string(prompts[i].size()) + " tokens) plus " +
                                        std::to_string(max_new_tokens) + " new tokens is beyond model.max_seq_len " +
                                        std::to_string(c.max_seq_len) + "; shorten it or lower --max-new-tokens");
    }
}

std::vector<Generation> generate(Transformer& model, const std::vector<std::vector<int64_t>>& prompts,
                                 const GenerationOptions& o, GenerationTiming* timing) {
    if (o.speculative_mtp) return generateSpeculatively(model, prompts, o, timing);
    const ModelConfig& c = model->config();
    checkPrompts(c, prompts, o.max_new_tokens);
    torch::NoGradGuard no_grad;
    const bool was_training = model->is_training();
    model->eval();
    const auto device = model->parameters().front().device();
    auto generator = at::make_generator<at::CPUGeneratorImpl>(o.seed);
    std::vector<Generation> out(prompts.size());
    GenerationTiming spent;
    const int64_t wave = std::max<int64_t>(1, c.max_batch_size);
    for (size_t first = 0; first < prompts.size(); first += size_t(wave)) {
        const int64_t rows = std::min<int64_t>(wave, int64_t(prompts.size() - first));
        KvCache cache = model->newCache(rows, o.form);
        std::vector<int64_t> next(rows), length(rows);
        // Each accepts a token (and its log-probability) from its row's logits.
        auto take = [&](int64_t row, const torch::Tensor& logits) {
            Generation& g = out[first + size_t(row)];
            const int64_t token = drawToken(logits, o.sampling, generator);
            g.tokens.push_back(token);
            g.logprobs.push_back(logits.to(torch::kFloat64).log_softmax(0)[token].item<double>());
            g.ended = token == o.end_token;
            next[row] = token;
        };
        // Prefill: the prompts of one length together, each into its row from position 0
        // (prompts of other lengths in forward passes of their own).
        auto start = std::chrono::steady_clock::now();
        std::map<size_t, std::vector<int64_t>> rows_of_length;
        for (int64_t row = 0; row < rows; ++row) rows_of_length[prompts[first + size_t(row)].size()].push_back(row);
        std::vector<torch::Tensor> last(static_cast<size_t>(rows));  // each row's last prompt position
        for (const auto& [n, same] : rows_of_length) {
            std::vector<int64_t> flat;
            for (int64_t row : same) {
                const auto& prompt = prompts[first + size_t(row)];
                flat.insert(flat.end(), prompt.begin(), prompt.end());
                length[row] = int64_t(n);
                spent.prefill_tokens += int64_t(n);
            }
            auto tokens = torch::tensor(flat, torch::kInt64).view({int64_t(same.size()), int64_t(n)}).to(device);
            // (the head over each prompt's last position only: its logits are all a draw reads)
            auto logits = model->decode(tokens, cache, same, std::vector<int64_t>(same.size(), 0),
                                        TransformerImpl::LogitRows::Last);
            for (size_t i = 0; i < same.size(); ++i) last[size_t(same[i])] = logits[int64_t(i)][0];
        }
        // The first draws in prompt order, as every later step's.
        if (o.max_new_tokens > 0)
            for (int64_t row = 0; row < rows; ++row) take(row, last[size_t(row)]);
        spent.prefill_seconds += secondsSince(start);
        // Decode: every row still going, one token each per step, at its own position.
        start = std::chrono::steady_clock::now();
        for (int64_t step = 1; step < o.max_new_tokens; ++step) {
            std::vector<int64_t> active, starts, tokens;
            for (int64_t row = 0; row < rows; ++row)
                if (!out[first + size_t(row)].ended) {
                    active.push_back(row);
                    starts.push_back(length[row] + step - 1);
                    tokens.push_back(next[row]);
                }
            if (active.empty()) break;
            auto logits = model->decode(torch::tensor(tokens, torch::kInt64).view({-1, 1}).to(device), cache, active, starts);
            spent.decode_tokens += int64_t(active.size());
            for (size_t i = 0; i < active.size(); ++i) take(active[i], logits[int64_t(i)][0]);
        }
        spent.decode_seconds += secondsSince(start);
    }
    if (was_training) model->train();
    if (timing) *timing = spent;
    return out;
}

}  // namespace trainbench
