// generateText: the tokenizer of the data section, the weights, and generate() between them.
#include "trainbench/text_generation.h"

#include <stdexcept>

#include "generate/generation.h"
#include "generate/prompt_codec.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "trainbench/config_io.h"
#include "weights/hf_weights.h"
#include "model/compute_precision.h"

namespace trainbench {

TextGeneration generateText(const TextGenerationRequest& request) {
    const RunConfig& config = request.config;
    // The data section gives the tokenizer only: its files need not be there.
    for (const auto& issue : validateRunConfig(config))
        if (!isDataIssue(issue)) throw ConfigError(issue.path, issue.message);
    if (request.speculative_mtp && config.model.n_mtp_depth < 1)
        throw ConfigError("--speculative", "--speculative mtp drafts with a multi-token-prediction module and "
                                           "model.n_mtp_depth is 0: train with model.n_mtp_depth 1, or leave it out");
    if (request.speculative_mtp && request.temperature != 0)
        throw ConfigError("--temperature", "--speculative mtp keeps greedy decoding's tokens: use --temperature 0");
    const PromptCodec codec(config.data);
    std::vector<std::vector<int64_t>> prompts;
    for (size_t i = 0; i < request.prompts.size(); ++i) prompts.push_back(codec.encode(request.prompts[i], i, "--prompt"));
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
    options.speculative_mtp = request.speculative_mtp;
    std::vector<Generation> generated;
    GenerationTiming timing;
    try {
        const ComputeScope precision(c10::kCPU, computePrecisionOf(config, model));
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
    out.drafted = timing.drafted;
    out.accepted = timing.accepted;
    if (timing.drafted > 0) out.acceptance_rate = double(timing.accepted) / double(timing.drafted);
    if (timing.forwards > 0) out.tokens_per_forward = double(timing.decode_tokens) / double(timing.forwards);
    return out;
}

}  // namespace trainbench
