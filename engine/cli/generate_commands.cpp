// `generate`: text from a trained model. The weights come from --checkpoint (a weights file, a
// checkpoint directory or a Hugging Face directory) or --run (its newest checkpoint, or --step's);
// the config from the CONFIG argument, else from the run in the store.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command_table.h"
#include "cli/config_loading.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/hf_interop.h"
#include "trainbench/run_store.h"
#include "trainbench/text_generation.h"

namespace trainbench::cli {
namespace {

struct GenerateOptions {
    std::string config_path, checkpoint, run_id, store, prompts_file;
    std::vector<std::string> overrides, prompts;
    int64_t step = 0;
    int64_t max_new_tokens = 64;
    double temperature = 1.0, top_p = 1.0;
    int64_t top_k = 0;
    uint64_t seed = 0;
    std::string cache = "absorb";
    std::string speculative = "none";
    bool as_json = false;
};

// One prompt per line of the file; empty lines are skipped.
std::vector<std::string> readPromptsFile(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw ConfigError("--prompts", path + ": cannot be read; give a text file with one prompt per line");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(line);
    return out;
}

// A Hugging Face directory read as a run config: the model from its config.json, the prompts
// encoded with its tokenizer.json (or a SentencePiece tokenizer.model), else as bytes.
RunConfig configOfHuggingFaceDirectory(const std::string& dir) {
    RunConfig config;
    std::vector<std::string> notes;
    config.model = readHuggingFaceConfig(dir, &notes);
    for (const auto& note : notes) std::cerr << "note: " << note << "\n";
    config.data.source = choiceName(DataSource::Text);
    for (const char* name : {"tokenizer.json", "tokenizer.model"})
        if (std::filesystem::is_regular_file(std::filesystem::path(dir) / name)) {
            config.data.tokenizer = (std::filesystem::path(dir) / name).string();
            break;
        }
    config.train.seq_len = std::min(config.train.seq_len, config.model.max_seq_len);
    return config;
}

int commandGenerate(const GenerateOptions& o) {
    TextGenerationRequest request;
    if (!o.run_id.empty()) {
        RunStore store(storeFolder(o.store));
        const auto run = store.findRun(o.run_id);
        if (!run) throw ConfigError("--run", "no run " + o.run_id + " in the store; `trainbench-cli runs` lists them");
        request.weights = checkpointOfStep(store.checkpointFolder(o.run_id), o.step).path;
        if (o.config_path.empty()) {
            // The run's own config, with --set applied (generateText validates it).
            request.config = parseRunConfig(run->config_json, "run " + o.run_id);
            for (const auto& assignment : o.overrides) applyConfigOverride(request.config, assignment);
        } else {
            request.config = loadWithOverrides(o.config_path, o.overrides);
        }
    } else if (o.config_path.empty()) {
        if (!isHuggingFaceDirectory(o.checkpoint))
            throw ConfigError("config", "give the run config (CONFIG) with --checkpoint, or use --run RUN_ID (a Hugging "
                                        "Face directory needs no CONFIG: its config.json and tokenizer are read)");
        request.config = configOfHuggingFaceDirectory(o.checkpoint);
        for (const auto& assignment : o.overrides) applyConfigOverride(request.config, assignment);
        request.weights = o.checkpoint;
    } else {
        request.config = loadWithoutData(o.config_path, o.overrides);
        request.weights = o.checkpoint;
    }
    request.prompts = o.prompts;
    if (!o.prompts_file.empty())
        for (auto& prompt : readPromptsFile(o.prompts_file)) request.prompts.push_back(std::move(prompt));
    if (request.prompts.empty()) throw ConfigError("--prompt", "give at least one --prompt or a --prompts file");
    request.max_new_tokens = o.max_new_tokens;
    request.temperature = o.temperature;
    request.top_k = o.top_k;
    request.top_p = o.top_p;
    request.seed = o.seed;
    request.absorbed_cache = o.cache == "absorb";
    request.speculative_mtp = o.speculative == "mtp";
    const TextGeneration result = generateText(request);
    if (o.as_json) {
        auto completions = nlohmann::json::array();
        for (const auto& c : result.completions)
            completions.push_back({{"prompt", c.prompt},
                                   {"text", c.text},
                                   {"prompt_ids", c.prompt_ids},
                                   {"ids", c.ids},
                                   {"logprobs", c.logprobs},
                                   {"ended", c.ended}});
        nlohmann::json summary{{"completions", completions},
                               {"prefill_tokens_per_s", result.prefill_tokens_per_s},
                               {"decode_tokens_per_s", result.decode_tokens_per_s}};
        if (request.speculative_mtp) {
            summary["speculative"] = "mtp";
            summary["drafted"] = result.drafted;
            summary["accepted"] = result.accepted;
            summary["acceptance_rate"] = result.acceptance_rate;
            summary["tokens_per_forward"] = result.tokens_per_forward;
        }
        std::cout << summary
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)  // bytes may not be UTF-8
                  << "\n";
        return 0;
    }
    for (const auto& c : result.completions) std::cout << c.prompt << c.text << "\n";
    return 0;
}

}  // namespace

void addGenerateCommands(CLI::App& app, CommandTable& table) {
    auto o = std::make_shared<GenerateOptions>();
    auto* generate = app.add_subcommand("generate", "Continue prompts with a trained model (sampling with MLA's KV cache)");
    generate->add_option("config", o->config_path,
                         "Run config (JSON) whose model and data.tokenizer the weights belong to; with --run, "
                         "the run's own config when omitted; with a Hugging Face directory, its config.json and "
                         "tokenizer when omitted");
    auto* checkpoint = generate->add_option("--checkpoint", o->checkpoint,
                                            "model.safetensors file, a checkpoint directory or a Hugging Face directory");
    auto* run = generate->add_option("--run", o->run_id, "A run in the store: its newest valid checkpoint (or --step's)");
    checkpoint->excludes(run);
    generate->add_option("--step", o->step, "With --run: the checkpoint of this optimizer step (default: the newest)")
        ->needs(run)
        ->check(CLI::NonNegativeNumber);
    generate->add_option("--prompt", o->prompts, "A prompt to continue (repeat for several)");
    generate->add_option("--prompts", o->prompts_file, "A text file of prompts, one per line");
    generate->add_option("--max-new-tokens", o->max_new_tokens, "Tokens to add to each prompt at most")
        ->default_val(64)
        ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
    generate->add_option("--temperature", o->temperature, "Softmax temperature; 0 decodes greedily")
        ->default_val(1.0)
        ->check(CLI::Range(0.0, 100.0));
    generate->add_option("--top-k", o->top_k, "Draw among the k most likely tokens only (0: all)")
        ->default_val(0)
        ->check(CLI::Range(int64_t(0), int64_t(1) << 31));
    generate->add_option("--top-p", o->top_p, "Draw among the fewest most likely tokens reaching probability p")
        ->default_val(1.0)
        ->check(CLI::Range(1e-9, 1.0));
    generate->add_option("--seed", o->seed, "Seed of the draws (the same seed, the same text)")->default_val(0);
    generate->add_option("--cache", o->cache,
                         "MLA's cache: absorb (the compressed latent and the shared rotary key per token) or naive "
                         "(per-head keys and values)")
        ->default_val("absorb")
        ->check(CLI::IsMember({"absorb", "naive"}));
    addOverridesOption(generate, o->overrides);
    addStoreOption(generate, o->store);
    generate->add_option("--speculative", o->speculative,
                         "mtp: draft the token after next with the multi-token-prediction module and verify it in the "
                         "main model's next forward (greedy, --temperature 0: the same tokens, fewer forwards); none: "
                         "one token a forward")
        ->check(CLI::IsMember({"none", "mtp"}))
        ->default_val("none");
    addJsonFlag(generate, o->as_json, "Print one JSON object: each completion's text, ids and log-probabilities, and tokens/s");
    table.add(generate, [o] {
        if (o->checkpoint.empty() && o->run_id.empty())
            throw ConfigError("--checkpoint", "give --checkpoint (weights) or --run RUN_ID");
        return commandGenerate(*o);
    });
}

}  // namespace trainbench::cli
