// Which weights `export-hf` writes: a checkpoint directory, verified, with its own config.
#include <filesystem>

#include "train/checkpoint.h"
#include "trainbench/config_io.h"
#include "trainbench/hf_interop.h"

namespace trainbench {

namespace fs = std::filesystem;

HfExportSource exportSourceOfCheckpoint(const std::string& checkpoint_dir) {
    const TrainerState state = readTrainerState(checkpoint_dir);  // verifies trainer.json's checksum
    const RunConfig config = parseRunConfig(state.config_json, checkpoint_dir + "/trainer.json");
    HfExportSource source;
    source.model = config.model;
    source.weights = (fs::path(checkpoint_dir) / "model.safetensors").string();
    if (readsDocuments(config.data)) source.tokenizer = config.data.tokenizer;
    return source;
}

HfExportSummary exportCheckpointToHuggingFace(const std::string& checkpoint_dir, HfExportOptions options) {
    const HfExportSource source = exportSourceOfCheckpoint(checkpoint_dir);
    options.tokenizer_path = source.tokenizer;
    HfExportSummary summary = exportHuggingFace(source.model, source.weights, options);
    summary.checkpoint = checkpoint_dir;
    summary.step = readTrainerState(checkpoint_dir).step;
    return summary;
}

}  // namespace trainbench
