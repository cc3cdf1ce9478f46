// Hugging Face interop: a model section to and from config.json, weights to and from an HF directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainbench/config_choices.h"
#include "trainbench/hf_directory.h"
#include "trainbench/run_config.h"

namespace trainbench {

// How the routed experts' weights are laid out in an exported directory. `per-expert`: one
// tensor per expert and projection (model.layers.L.mlp.experts.E.gate_proj.weight, ...), what the
// published DeepSeek checkpoints, vLLM, SGLang and every transformers release read, and what
// transformers 5 itself writes. `fused`: transformers 5's in-memory layout, one tensor per
// layer and projection pair (mlp.experts.gate_up_proj [E, 2 I, H], mlp.experts.down_proj
// [E, H, I]), which only transformers 5 and later read.
// The export's choices (HfExportOptions keeps each as the flag's text; code compares them as these).
enum class HfWeightDtype { Bf16, Fp32 };          // --dtype
enum class HfExpertLayout { PerExpert, Fused };  // --expert-layout
template <> struct ChoiceNames<HfWeightDtype> { static constexpr std::array names{"bf16", "fp32"}; };
template <> struct ChoiceNames<HfExpertLayout> { static constexpr std::array names{"per-expert", "fused"}; };

struct HfExportOptions {
    std::string out_dir;
    std::string dtype = "bf16";                // bf16 | fp32 (the router stays fp32 either way)
    int64_t shard_bytes = 5'000'000'000;        // a file holds at most this much (one tensor more if it is larger)
    std::string expert_layout = "per-expert";  // per-expert | fused
    std::string tokenizer_path;                 // data.tokenizer of the run, copied in when set
};

struct HfExportSummary {
    std::string dir;
    std::string checkpoint;  // exportCheckpointToHuggingFace: the checkpoint directory written
    int64_t step = 0;        // and its optimizer step
    std::string architecture;  // DeepseekV3ForCausalLM | DeepseekV2ForCausalLM
    int64_t tensors = 0;
    int64_t bytes = 0;  // of tensor data
    int64_t shards = 0;
};

// Writes `weights_path` (a model.safetensors file or a checkpoint directory, reference names)
// as a Hugging Face directory at options.out_dir: config.json, generation_config.json,
// model.safetensors or shards with model.safetensors.index.json, and the tokenizer's files.
// Built in a `.partial` sibling and renamed at the end; an existing out_dir is refused. Throws
// ConfigError naming the option, field, file or tensor at fault.
HfExportSummary exportHuggingFace(const ModelConfig& model, const std::string& weights_path, const HfExportOptions& options);

// What `export-hf` reads from a checkpoint directory (verified): its weights file and the
// model section of its trainer.json. Throws ConfigError naming the corrupt or missing file.
struct HfExportSource {
    ModelConfig model;
    std::string weights;    // model.safetensors
    std::string tokenizer;  // the run's tokenizer file, empty when it read bytes
};
HfExportSource exportSourceOfCheckpoint(const std::string& checkpoint_dir);
// A checkpoint directory as a Hugging Face directory: its weights, the model section and the
// tokenizer of its trainer.json (options.tokenizer_path is set from it).
HfExportSummary exportCheckpointToHuggingFace(const std::string& checkpoint_dir, HfExportOptions options);

// "5GB" (10^9), "500MB", "2GiB" (2^30), "1048576": bytes. Throws ConfigError naming `option`.
int64_t parseByteSize(const std::string& text, const std::string& option);

}  // namespace trainbench

// Floor: interop/ (engine/README.md)
