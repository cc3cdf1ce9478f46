// SampleWriter: the text a run writes as it trains (train.sample_every): the model continues
// train.sample_prompts with the attention cache, and the samples go to the run store as
// "sample" events (trainbench/run_sample.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "generate/prompt_codec.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "trainbench/run_config.h"
#include "trainbench/run_sample.h"

namespace trainbench {

class SampleWriter {
public:
    // Encodes the prompts: ConfigError naming train.sample_prompts (or data.tokenizer) for one
    // that cannot be encoded or leaves no room for train.sample_tokens within model.max_seq_len.
    // What the session checks before a run starts.
    explicit SampleWriter(const RunConfig& config);

    // Whether samples are written after `steps_done` optimizer steps: every sample_every, and
    // at the run's last step. The same answer on every rank.
    static bool due(const TrainConfig& train, int64_t steps_done, bool last);
    // The continuations by `model` (whole weights; left as it was).
    std::vector<RunSample> write(Transformer& model, int64_t steps_done);
    // The same from whole weights under their reference names (a divided model, gathered):
    // loaded into a model of this rank's own, built on `device` the first time.
    std::vector<RunSample> write(const NamedTensors& weights, const torch::Device& device, int64_t steps_done);

    // The prompts, one per line of train.sample_prompts; one empty prompt when there are none.
    static std::vector<std::string> promptsOf(const TrainConfig& train);

private:
    RunConfig config_;
    PromptCodec codec_;
    std::vector<std::string> prompts_;
    std::vector<std::vector<int64_t>> ids_;
    std::optional<Transformer> copy_;
};

}  // namespace trainbench
