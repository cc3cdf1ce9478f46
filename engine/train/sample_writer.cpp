#include "train/sample_writer.h"

#include <sstream>

#include "generate/generation.h"
#include "trainbench/config_io.h"
#include "model/compute_precision.h"

namespace trainbench {

std::vector<std::string> SampleWriter::promptsOf(const TrainConfig& train) {
    std::vector<std::string> prompts;
    std::istringstream lines(train.sample_prompts);
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) prompts.push_back(line);
    }
    if (prompts.empty()) prompts.emplace_back();
    return prompts;
}

SampleWriter::SampleWriter(const RunConfig& config) : config_(config), codec_(config.data), prompts_(promptsOf(config.train)) {
    const int64_t room = config.model.max_seq_len - config.train.sample_tokens;
    for (size_t i = 0; i < prompts_.size(); ++i) {
        // No prompt: the start of a document, which follows an end-of-text token.
        auto ids = prompts_[i].empty() ? std::vector<int64_t>{codec_.endOfText()}
                                       : codec_.encode(prompts_[i], i, "train.sample_prompts");
        for (int64_t id : ids)
            if (id >= config.model.vocab_size)
                throw ConfigError("train.sample_prompts",
                                  "sample prompt " + std::to_string(i + 1) + " has token " + std::to_string(id) +
                                      ", outside model.vocab_size " + std::to_string(config.model.vocab_size));
        if (int64_t(ids.size()) > room)
            throw ConfigError("train.sample_prompts",
                              "sample prompt " + std::to_string(i + 1) + " is " + std::to_string(ids.size()) +
                                  " tokens; with train.sample_tokens " + std::to_string(config.train.sample_tokens) +
                                  " it passes model.max_seq_len " + std::to_string(config.model.max_seq_len) +
                                  ": shorten it or lower train.sample_tokens");
        ids_.push_back(std::move(ids));
    }
}

bool SampleWriter::due(const TrainConfig& train, int64_t steps_done, bool last) {
    const int64_t every = train.sample_every;
    return every > 0 && steps_done > 0 && (steps_done % every == 0 || last);
}

std::vector<RunSample> SampleWriter::write(Transformer& model, int64_t steps_done) {
    GenerationOptions options;
    options.sampling.temperature = config_.train.sample_temperature;
    options.max_new_tokens = config_.train.sample_tokens;
    options.seed = uint64_t(config_.train.seed) + uint64_t(steps_done);
    options.end_token = codec_.endOfText();
    std::vector<Generation> generated;
    {
        const ComputeScope precision(model->parameters().front().device().type(), computePrecisionOf(config_, model));
        generated = generate(model, ids_, options);
    }
    std::vector<RunSample> samples;
    for (size_t i = 0; i < generated.size(); ++i) {
        RunSample sample;
        sample.step = steps_done;
        sample.prompt = prompts_[i];
        sample.ended = generated[i].ended;
        auto ids = generated[i].tokens;
        if (sample.ended) ids.pop_back();
        sample.completion = codec_.decode(ids);
        samples.push_back(std::move(sample));
    }
    return samples;
}

std::vector<RunSample> SampleWriter::write(const NamedTensors& weights, const torch::Device& device, int64_t steps_done) {
    if (!copy_) {
        copy_.emplace(config_.model);
        (*copy_)->to(device);
    }
    loadIntoStateDict(stateDict(*copy_), weights, "the gathered weights");
    return write(*copy_, steps_done);
}

}  // namespace trainbench
