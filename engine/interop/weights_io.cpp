// `init` and `eval` behind the public API: the model, safetensors and the data's validation part.
#include "trainbench/weights_io.h"

#include "data/evaluate.h"
#include "data/token_source.h"
#include "weights/hf_weights.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "train/checkpoint.h"
#include "train/noise_scale_probe.h"
#include "trainbench/config_io.h"

#include <filesystem>

namespace trainbench {

void writeInitialWeights(const RunConfig& config, uint64_t seed, const std::string& path) {
    requireValidRunConfig(config);
    Transformer model(config.model);
    initializeWeights(model, seed);
    writeSafetensors(path, stateDict(model), {{"format", "pt"}, {"producer", "trainbench"}, {"seed", std::to_string(seed)}});
}

EvalResult evaluateWeightsFile(const RunConfig& config, const std::string& weights_path) {
    requireValidRunConfig(config);
    // A weights file, a checkpoint directory or a Hugging Face directory.
    Transformer model(config.model);
    model->setHeadChunkTokens(config.runtime.head_chunk_tokens);
    loadWeightsInto(model, weights_path);
    auto source = openTokenSource(config);
    return evaluateModel(model, *source, config, torch::kCPU);
}

}  // namespace trainbench

namespace trainbench {

NoiseScaleMeasurement measureNoiseScaleOfWeights(const RunConfig& config, const std::string& weights_path,
                                                 int64_t micro_batch_size) {
    requireValidRunConfig(config);
    // A weights file, a checkpoint directory (its model.safetensors) or a Hugging Face directory.
    Transformer model(config.model);
    model->setHeadChunkTokens(config.runtime.head_chunk_tokens);
    loadWeightsInto(model, weights_path);
    auto source = openTokenSource(config);
    const int64_t b = micro_batch_size > 0 ? micro_batch_size : config.train.micro_batch_size;
    return measureNoiseScale(model, *source, config, torch::kCPU, b);
}

NoiseScaleMeasurement measureNoiseScaleOfCheckpoint(const std::string& checkpoint_dir, int64_t micro_batch_size) {
    const TrainerState state = readTrainerState(checkpoint_dir);
    RunConfig config = parseRunConfig(state.config_json, checkpoint_dir + "/trainer.json");
    // The ranks' split does not matter at fixed weights: one process on the CPU.
    config.runtime.world_size = 1;
    config.runtime.device = "cpu";
    return measureNoiseScaleOfWeights(config, checkpoint_dir, micro_batch_size);
}

}  // namespace trainbench
