// `export-hf`: a run's checkpoint (or a checkpoint directory, or a weights file with its
// config) as a Hugging Face directory. (Import is `init --from-hf`, model_commands.cpp.)
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command_table.h"
#include "cli/config_loading.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/hf_interop.h"
#include "trainbench/run_store.h"

namespace trainbench::cli {
namespace {

struct ExportHfOptions {
    std::vector<std::string> positionals, overrides;
    std::string checkpoint, store, shard_size = "5GB";
    int64_t step = 0;
    HfExportOptions export_options;
};

int commandExportHf(const ExportHfOptions& o) {
    HfExportOptions options = o.export_options;
    options.shard_bytes = parseByteSize(o.shard_size, "--shard-size");
    HfExportSummary summary;
    if (!o.checkpoint.empty()) {
        if (o.step > 0) throw ConfigError("--step", "--step picks a checkpoint of a run; with --checkpoint name it directly");
        if (o.positionals.size() > 1) throw ConfigError("", "with --checkpoint give at most one CONFIG");
        const bool is_checkpoint_dir = std::filesystem::is_regular_file(o.checkpoint + "/trainer.json");
        if (is_checkpoint_dir && o.positionals.empty()) {
            summary = exportCheckpointToHuggingFace(o.checkpoint, options);
        } else {
            if (o.positionals.empty())
                throw ConfigError("", o.checkpoint + " is a weights file: give the CONFIG it was trained with");
            // A CONFIG given names the model section; a checkpoint directory keeps its tokenizer.
            HfExportSource source;
            if (is_checkpoint_dir) source = exportSourceOfCheckpoint(o.checkpoint);
            else source.weights = o.checkpoint;
            options.tokenizer_path = source.tokenizer;
            summary = exportHuggingFace(loadWithoutData(o.positionals[0], o.overrides).model, source.weights, options);
        }
    } else {
        if (o.positionals.size() != 1)
            throw ConfigError("", "export-hf takes a RUN_ID (see `trainbench-cli runs`), or --checkpoint PATH [CONFIG]");
        RunStore store(storeFolder(o.store));
        if (!store.findRun(o.positionals[0]))
            throw ConfigError("", "run '" + o.positionals[0] + "' is not in the store " + store.path() +
                                      "; list runs with `trainbench-cli runs`");
        summary =
            exportCheckpointToHuggingFace(checkpointOfStep(store.checkpointFolder(o.positionals[0]), o.step).path, options);
    }
    std::fprintf(stderr, "%s: %lld tensors, %.1f MB in %lld file(s), %s, experts %s\n", summary.architecture.c_str(),
                 (long long)summary.tensors, summary.bytes / 1e6, (long long)summary.shards, options.dtype.c_str(),
                 options.expert_layout.c_str());
    std::cout << summary.dir << "\n";
    return 0;
}

}  // namespace

void addHuggingFaceCommands(CLI::App& app, CommandTable& table) {
    auto options = std::make_shared<ExportHfOptions>();
    ExportHfOptions& o = *options;
    auto* export_hf = app.add_subcommand("export-hf", "Write a run's checkpoint as a Hugging Face directory "
                                                      "(transformers, vLLM and SGLang load it)");
    export_hf->add_option("source", o.positionals,
                          "RUN_ID (its newest valid checkpoint, or --step N); or with --checkpoint, the CONFIG of a "
                          "weights file");
    export_hf->add_option("--step", o.step, "The checkpoint of this optimizer step")->check(CLI::PositiveNumber);
    export_hf->add_option("--checkpoint", o.checkpoint, "A checkpoint directory, or a .safetensors file with CONFIG");
    export_hf->add_option("--out", o.export_options.out_dir, "The directory to write (must not exist)")->required();
    export_hf->add_option("--dtype", o.export_options.dtype, "bf16 or fp32 (the router stays fp32)")
        ->check(CLI::IsMember({"bf16", "fp32"}));
    export_hf->add_option("--shard-size", o.shard_size, "Largest file, e.g. 5GB, 500MB, 2GiB (default 5GB)");
    export_hf->add_option("--expert-layout", o.export_options.expert_layout,
                          "per-expert (every transformers release, vLLM, SGLang) or fused (transformers 5's own)")
        ->check(CLI::IsMember({"per-expert", "fused"}));
    addOverridesOption(export_hf, o.overrides);
    addStoreOption(export_hf, o.store);
    table.add(export_hf, [options] { return commandExportHf(*options); });
}

}  // namespace trainbench::cli
