// generateText: the tokenizer of the data section, the weights, and generate() between them.
#include "trainbench/text_generation.h"

#include <memory>
#include <stdexcept>

#include "generate/generation.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"
#include "trainbench/config_io.h"
#include "weights/hf_weights.h"

namespace trainbench {
namespace {

// Text to ids and back as the run's data section reads text: data.tokenizer's, or bytes.
class PromptCodec {
public:
    explicit PromptCodec(const RunConfig& config) {
        if (!isChoice(config.data.source, DataSource::Text))
            throw ConfigError("data.source", "data.source \"" + config.data.source +
                                                 "\" has no text to encode prompts with; generate needs a config whose "
                                                 "data.source is \"text\" (bytes, or data.tokenizer)");
        if (!config.data.tokenizer.empty()) {
            try {
                tokenizer_ = openTokenizer(config.data.tokenizer);
            } catch (const TokenizerError& e) {
                throw ConfigError("data.tokenizer", e.what());
            }
        }
    }
    std::vector<int64_t> encode(const std::string& text, size_t which) const {
        if (text.empty()) throw ConfigError("--prompt", "prompt " + std::to_string(which + 1) + " is empty");
        if (!tokenizer_) return bytes(text);
        try {
            const auto ids = tokenizer_->encode(text);
            return {ids.begin(), ids.end()};
        } catch (const TokenizerError& e) {
            throw ConfigError("--prompt", "prompt " + std::to_string(which + 1) + ": " + e.what());
        }
    }
    std::string decode(const std::vector<int64_t>& ids) const {
        if (!tokenizer_) {
            std::string out;
            for (int64_t id : ids) out.push_back(static_cast<char>(id));
            return out;
        }
        return tokenizer_->decode(std::vector<int32_t>(ids.begin(), ids.end()));
    }
    // Byte text ends its documents with byte 0 (data.layout packed); a tokenizer names its own.
    int64_t endOfText() const { return tokenizer_ ? tokenizer_->endOfText() : 0; }

private:
    static std::vector<int64_t> bytes(const std::string& text) {
        std::vector<int64_t> out;
        for (unsigned char ch : text) out.push_back(ch);
        return out;
    }
    std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace

TextGeneration generateText(const TextGenerationRequest& request) {
    const RunConfig& config = request.config;
    requireValidRunConfig(config);
    const PromptCodec codec(config);
    std::vector<std::vector<int64_t>> prompts;
    for (size_t i = 0; i < request.prompts.size(); ++i) prompts.push_back(codec.encode(request.prompts[i], i));
    Transformer model(config.model);
    // A weights file, a checkpoint directory or a Hugging Face directory; another model's
    // weights are refused naming the file.
    loadWeightsInto(model, request.weights);
    GenerationOptions options;
    options.sampling = {request.temperature, request.top_k, request.top_p};
    options.max_new_tokens = request.max_new_tokens;
    options.seed = request.seed;
    options.end_token = codec.endOfText();
    options.form = request.absorbed_cache ? CacheForm::Absorbed : CacheForm::Naive;
    std::vector<Generation> generated;
    GenerationTiming timing;
    try {
        generated = generate(model, prompts, options, &timing);
    } catch (const std::invalid_argument& e) {
        throw ConfigError("--prompt", e.what());
    }
    TextGeneration out;
    for (size_t i = 0; i < generated.size(); ++i) {
        TextCompletion c;
        c.prompt = request.prompts[i];
        c.prompt_ids = prompts[i];
        c.ids = generated[i].tokens;
        c.logprobs = generated[i].logprobs;
        c.ended = generated[i].ended;
        std::vector<int64_t> shown = c.ids;
        if (c.ended && !shown.empty()) shown.pop_back();
        c.text = codec.decode(shown);
        out.completions.push_back(std::move(c));
    }
    if (timing.prefill_seconds > 0) out.prefill_tokens_per_s = double(timing.prefill_tokens) / timing.prefill_seconds;
    if (timing.decode_seconds > 0) out.decode_tokens_per_s = double(timing.decode_tokens) / timing.decode_seconds;
    return out;
}

}  // namespace trainbench
