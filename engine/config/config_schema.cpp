// The config schema: every field of every section, its type, its help text and its JSON binding.
#include "config/config_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainbench {
namespace {

using nlohmann::json;

// A value as the user wrote it, shortened for a message; never throws on text that is not
// UTF-8, and never cuts a UTF-8 character in half.
std::string describe(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() <= 60) return text;
    size_t cut = 57;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return text.substr(0, cut) + "...";
}

[[noreturn]] void typeError(const std::string& path, const json& value, const char* expected) {
    throw ConfigError(path, path + ": expected " + expected + ", got " + describe(value) +
                                "; write it as " + expected + " (see docs/CONFIG.md)");
}

int64_t readInt(const std::string& path, const json& v) {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
        double d = v.get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
    }
    typeError(path, v, "an integer");
}

double readFloat(const std::string& path, const json& v) {
    if (v.is_number()) return v.get<double>();
    typeError(path, v, "a number");
}

bool readBool(const std::string& path, const json& v) {
    if (v.is_boolean()) return v.get<bool>();
    typeError(path, v, "true or false");
}

std::string readString(const std::string& path, const json& v) {
    if (v.is_string()) return v.get<std::string>();
    typeError(path, v, "a string");
}

// Builders for the table: each binds a member of a section struct.
template <typename Section>
struct Binder {
    std::string section;
    Section RunConfig::*member;
    std::vector<ConfigField>* out;

    void integer(const char* key, int64_t Section::*field, const char* help) {
        auto m = member;
        std::string path = section + "." + key;
        out->push_back({{section, key, "int", {}, help},
                        [m, field](const RunConfig& c) { return json((c.*m).*field); },
                        [m, field, path](RunConfig& c, const json& v) { (c.*m).*field = readInt(path, v); }});
    }
    // An integer or null (nullopt); with `auto_word` the word "auto" reads as null too (the
    // field's rule decides), and null is what is written back.
    void optionalInteger(const char* key, std::optional<int64_t> Section::*field, const char* help,
                         bool auto_word = false) {
        auto m = member;
        std::string path = section + "." + key;
        out->push_back({{section, key, "int", {}, help},
                        [m, field](const RunConfig& c) {
                            const auto& o = (c.*m).*field;
                            return o ? json(*o) : json(nullptr);
                        },
                        [m, field, path, auto_word](RunConfig& c, const json& v) {
                            if (v.is_null() || (auto_word && v.is_string() && v.get<std::string>() == "auto"))
                                (c.*m).*field = std::nullopt;
                            else if (auto_word && !v.is_number()) typeError(path, v, "an integer or \"auto\"");
                            else (c.*m).*field = readInt(path, v);
                        }});
    }
    void real(const char* key, double Section::*field, const char* help) {
        auto m = member;
        std::string path = section + "." + key;
        out->push_back({{section, key, "float", {}, help},
                        [m, field](const RunConfig& c) { return json((c.*m).*field); },
                        [m, field, path](RunConfig& c, const json& v) { (c.*m).*field = readFloat(path, v); }});
    }
    void boolean(const char* key, bool Section::*field, const char* help) {
        auto m = member;
        std::string path = section + "." + key;
        out->push_back({{section, key, "bool", {}, help},
                        [m, field](const RunConfig& c) { return json((c.*m).*field); },
                        [m, field, path](RunConfig& c, const json& v) { (c.*m).*field = readBool(path, v); }});
    }
    void optionalBoolean(const char* key, std::optional<bool> Section::*field, const char* help) {
        auto m = member;
        std::string path = section + "." + key;
        out->push_back({{section, key, "bool", {}, help},
                        [m, field](const RunConfig& c) {
                            const auto& o = (c.*m).*field;
                            return o ? json(*o) : json(nullptr);
                        },
                        [m, field, path](RunConfig& c, const json& v) {
                            if (v.is_null()) (c.*m).*field = std::nullopt;
                            else (c.*m).*field = readBool(path, v);
                        }});
    }
    // Marks the field just bound as one only the reference's inference code reads.
    void markInferenceOnly() { out->back().info.inference_only = true; }
    void text(const char* key, std::string Section::*field, const char* help,
              std::vector<std::string> choices = {}) {
        auto m = member;
        std::string path = section + "." + key;
        std::string type = choices.empty() ? "string" : "choice";
        out->push_back({{section, key, type, choices, help},
                        [m, field](const RunConfig& c) { return json((c.*m).*field); },
                        [m, field, path](RunConfig& c, const json& v) { (c.*m).*field = readString(path, v); }});
    }
    void optionalText(const char* key, std::optional<std::string> Section::*field, const char* help) {
        auto m = member;
        std::string path = section + "." + key;
        out->push_back({{section, key, "string", {}, help},
                        [m, field](const RunConfig& c) {
                            const auto& o = (c.*m).*field;
                            return o ? json(*o) : json(nullptr);
                        },
                        [m, field, path](RunConfig& c, const json& v) {
                            if (v.is_null()) (c.*m).*field = std::nullopt;
                            else (c.*m).*field = readString(path, v);
                        }});
    }
};

// data.sources: a JSON array of objects, or text of one object a line (easier to write in a
// shell's --set; empty text is no mixture).
std::vector<DataMixtureSource> readMixture(const std::string& path, const json& value) {
    json list = value;
    if (value.is_string()) {
        const std::string text = value.get<std::string>();
        list = json::array();
        size_t begin = 0, line = 0;
        while (begin <= text.size()) {
            size_t end = text.find('\n', begin);
            if (end == std::string::npos) end = text.size();
            const std::string piece = text.substr(begin, end - begin);
            ++line;
            if (piece.find_first_not_of(" \t\r") != std::string::npos) {
                const json parsed = json::parse(piece, nullptr, /*allow_exceptions=*/false);
                if (!parsed.is_object())
                    throw ConfigError(path, path + ": line " + std::to_string(line) + " (" + describe(piece) +
                                                ") is not a JSON object; write one source a line, e.g. "
                                                "{\"path\": \"web/\", \"weight\": 0.7}");
                list.push_back(parsed);
            }
            begin = end + 1;
        }
    }
    if (!list.is_array()) typeError(path, value, "a list of sources such as [{\"path\": \"web/\", \"weight\": 0.7}]");
    static const std::vector<std::string> keys{"name", "source", "path", "weight", "text_field"};
    std::vector<DataMixtureSource> out;
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string at = path + "[" + std::to_string(i) + "]";
        if (!list[i].is_object()) typeError(at, list[i], "an object such as {\"path\": \"web/\", \"weight\": 0.7}");
        DataMixtureSource source;
        for (const auto& [key, item] : list[i].items()) {
            const std::string field = at + "." + key;
            if (key == "name") source.name = readString(field, item);
            else if (key == "source") source.source = readString(field, item);
            else if (key == "path") source.path = readString(field, item);
            else if (key == "weight") source.weight = readFloat(field, item);
            else if (key == "text_field") source.text_field = readString(field, item);
            else {
                const std::string guess = closestName(key, keys);
                throw ConfigError(field, field + ": unknown key" + (guess.empty() ? "" : "; did you mean \"" + guess + "\"?") +
                                             " A source takes name, source, path, weight and text_field");
            }
        }
        out.push_back(std::move(source));
    }
    return out;
}

json mixtureJson(const std::vector<DataMixtureSource>& sources) {
    json out = json::array();
    for (const DataMixtureSource& s : sources) {
        json entry{{"path", s.path}, {"weight", s.weight}};
        if (!s.name.empty()) entry["name"] = s.name;
        if (!s.source.empty()) entry["source"] = s.source;
        if (!s.text_field.empty()) entry["text_field"] = s.text_field;
        out.push_back(std::move(entry));
    }
    return out;
}

std::vector<ConfigField> buildFields() {
    std::vector<ConfigField> f;

    Binder<ModelConfig> m{"model", &RunConfig::model, &f};
    m.integer("vocab_size", &ModelConfig::vocab_size, "Number of token ids (embedding rows and head outputs)");
    m.integer("dim", &ModelConfig::dim, "Hidden size d");
    m.integer("inter_dim", &ModelConfig::inter_dim, "Hidden size of the dense MLP in the first n_dense_layers blocks");
    m.integer("moe_inter_dim", &ModelConfig::moe_inter_dim, "Hidden size of one routed or shared expert");
    m.integer("n_layers", &ModelConfig::n_layers, "Number of transformer blocks");
    m.integer("n_dense_layers", &ModelConfig::n_dense_layers, "Leading blocks that use the dense MLP instead of mixture of experts");
    m.integer("n_heads", &ModelConfig::n_heads, "Attention heads");
    m.integer("n_routed_experts", &ModelConfig::n_routed_experts, "Routed experts per MoE layer (E)");
    m.integer("n_shared_experts", &ModelConfig::n_shared_experts, "Shared experts, fused into one MLP of width n_shared_experts*moe_inter_dim");
    m.integer("n_activated_experts", &ModelConfig::n_activated_experts, "Routed experts chosen per token (top-k)");
    m.integer("n_expert_groups", &ModelConfig::n_expert_groups, "Groups for group-limited routing (1: no grouping)");
    m.integer("n_limited_groups", &ModelConfig::n_limited_groups, "Groups a token may route into");
    m.text("score_func", &ModelConfig::score_func, "Router scores: softmax (V2) or sigmoid with renormalisation (V3)", choiceNames<ScoreFunction>());
    m.real("route_scale", &ModelConfig::route_scale, "Multiplies the routing weights");
    m.integer("q_lora_rank", &ModelConfig::q_lora_rank, "Rank of the low-rank query projection; 0 uses a full-rank wq");
    m.integer("kv_lora_rank", &ModelConfig::kv_lora_rank, "Width of the compressed key/value latent");
    m.integer("qk_nope_head_dim", &ModelConfig::qk_nope_head_dim, "Per-head query/key width without rotary embedding");
    m.integer("qk_rope_head_dim", &ModelConfig::qk_rope_head_dim, "Per-head query/key width with rotary embedding (even)");
    m.integer("v_head_dim", &ModelConfig::v_head_dim, "Per-head value width");
    m.integer("max_seq_len", &ModelConfig::max_seq_len,
              "Positions of the rotary table and of each decoding-cache row (generate, train.sample_every: the prompt "
              "plus its new tokens at most); train.seq_len may not pass it, and above original_seq_len it switches "
              "YaRN on, in training too");
    m.integer("original_seq_len", &ModelConfig::original_seq_len, "Context length the rotary base was trained for");
    m.real("rope_theta", &ModelConfig::rope_theta, "Rotary base");
    m.real("rope_factor", &ModelConfig::rope_factor, "YaRN context extension factor s");
    m.real("beta_fast", &ModelConfig::beta_fast, "YaRN fast boundary (rotations)");
    m.real("beta_slow", &ModelConfig::beta_slow, "YaRN slow boundary (rotations)");
    m.real("mscale", &ModelConfig::mscale, "YaRN attention-scale coefficient");
    m.optionalBoolean("gate_bias", &ModelConfig::gate_bias, "Auxiliary-loss-free balancing bias; unset follows the reference (on when dim == 7168)");
    m.real("bias_update_speed", &ModelConfig::bias_update_speed, "Gamma of the balancing-bias update per optimizer step");
    m.real("seq_aux_loss_alpha", &ModelConfig::seq_aux_loss_alpha, "Weight of the complementary sequence-wise balance loss");
    m.real("init_std", &ModelConfig::init_std, "Standard deviation of the normal weight initialisation");
    m.integer("n_mtp_depth", &ModelConfig::n_mtp_depth,
              "Multi-token-prediction modules D (DeepSeek-V3: 1): module k combines the main model's (or module "
              "k - 1's) hidden state with the embedding of the token k ahead and predicts the token k + 1 ahead, "
              "through one block of the model's kind and the shared head; trained with train.mtp_loss_weight, "
              "exported as the published layers n_layers .. n_layers + D - 1. 0: none");
    // Last: the reference's inference-only keys, kept so a published config loads unchanged.
    m.integer("max_batch_size", &ModelConfig::max_batch_size,
              "Rows of the decoding cache (generate, train.sample_every): the prompts decoded together, more run in "
              "waves; the reference allocates max_batch_size x max_seq_len positions in every layer. Not the training "
              "micro-batch (train.micro_batch_size): training never reads it");
    m.markInferenceOnly();
    m.text("dtype", &ModelConfig::dtype,
           "Storage of the published checkpoint the reference's inference code loads: bf16, or fp8 blocks with scales "
           "(scale_fmt); kept so a published config loads unchanged. trainbench trains and generates in runtime.dtype",
           choiceNames<CheckpointDtype>());
    m.markInferenceOnly();
    m.optionalText("scale_fmt", &ModelConfig::scale_fmt,
                   "Scale format of an fp8 published checkpoint (the reference's inference code); unused by trainbench");
    m.markInferenceOnly();

    Binder<TrainConfig> t{"train", &RunConfig::train, &f};
    t.integer("micro_batch_size", &TrainConfig::micro_batch_size, "Sequences per forward/backward on one rank (m)");
    t.integer("gradient_accumulation_steps", &TrainConfig::gradient_accumulation_steps, "Micro-batches accumulated per optimizer step (K)");
    t.optionalInteger("global_batch_size", &TrainConfig::global_batch_size, "Sequences per optimizer step (B = m*K*W); optional check");
    t.integer("seq_len", &TrainConfig::seq_len, "Tokens per training sequence (T)");
    t.integer("steps", &TrainConfig::steps, "Optimizer steps to train");
    t.integer("samples", &TrainConfig::samples,
              "Sequences to train on instead of steps (0: use steps); a multiple of micro_batch_size x world_size");
    t.integer("tokens", &TrainConfig::tokens,
              "Token positions (sequences x seq_len) to train on instead of steps or samples (0: use them); a "
              "multiple of micro_batch_size x world_size x seq_len. With a changing batch the run ends at this count");
    t.real("lr", &TrainConfig::lr, "Peak learning rate");
    t.real("min_lr", &TrainConfig::min_lr, "Final learning rate of the cosine or linear decay");
    t.integer("warmup_steps", &TrainConfig::warmup_steps, "Optimizer steps of linear warm-up from 0");
    t.integer("warmup_tokens", &TrainConfig::warmup_tokens,
              "The warm-up in token positions instead of steps (0: use warmup_steps); under a ramping or adaptive "
              "batch the decay is counted in tokens either way");
    t.text("schedule", &TrainConfig::schedule, "Learning-rate schedule after warm-up", choiceNames<LrSchedule>());
    t.real("weight_decay", &TrainConfig::weight_decay, "AdamW decoupled weight decay (not applied to norms and biases)");
    t.real("beta1", &TrainConfig::beta1, "AdamW first-moment decay");
    t.real("beta2", &TrainConfig::beta2, "AdamW second-moment decay");
    t.real("grad_clip", &TrainConfig::grad_clip, "Global gradient-norm clip after the whole window; 0 disables");
    t.real("mtp_loss_weight", &TrainConfig::mtp_loss_weight,
           "lambda of the multi-token-prediction loss (model.n_mtp_depth > 0): the objective is the main loss plus "
           "lambda / D x the sum of the D depths' losses, each a token-weighted mean over the window and the ranks "
           "(DeepSeek-V3: 0.3, then 0.1)");
    t.real("mtp_loss_weight_after", &TrainConfig::mtp_loss_weight_after,
           "lambda from mtp_loss_weight_switch_tokens on (DeepSeek-V3: 0.1 after the first 10T tokens)");
    t.integer("mtp_loss_weight_switch_tokens", &TrainConfig::mtp_loss_weight_switch_tokens,
              "Token positions (sequences x seq_len) after which a window trains with mtp_loss_weight_after; 0: "
              "mtp_loss_weight throughout");
    t.integer("seed", &TrainConfig::seed, "Seed of initialisation and sampling");
    t.text("init_from", &TrainConfig::init_from,
           "Start from these weights instead of initialising (empty): a Hugging Face model directory (config.json and "
           "safetensors, either expert layout, bf16/fp16/fp32 or fp8 blocks), a checkpoint directory or a .safetensors "
           "file of reference names; checked against the model section before the run starts");
    t.text("loss_normalization", &TrainConfig::loss_normalization, "Loss weighting: every counted target token weighs the same across the window and ranks", choiceNames<LossNormalization>());
    t.text("incomplete_window", &TrainConfig::incomplete_window, "Last window with fewer micro-batches: scale by its own token count, or drop it", choiceNames<IncompleteWindow>());
    t.boolean("sync_each_micro_batch", &TrainConfig::sync_each_micro_batch, "Reduce gradients after every micro-batch (same result, more communication)");
    t.text("batch_policy", &TrainConfig::batch_policy,
           "The global batch over the run: fixed; ramp from batch_ramp_start sequences to m x K x W over the first "
           "batch_ramp_tokens tokens; or adaptive, from m x K x W growing with the measured critical batch "
           "(batch_adapt_*). K changes, m does not: the same memory",
           choiceNames<BatchPolicy>());
    t.integer("batch_ramp_start", &TrainConfig::batch_ramp_start,
              "batch_policy ramp: the global batch of the first step, in sequences (rounded down to a multiple of m x W)");
    t.integer("batch_ramp_tokens", &TrainConfig::batch_ramp_tokens,
              "batch_policy ramp: the tokens (sequences x seq_len) over which the global batch grows to m x K x W");
    t.text("lr_batch_rule", &TrainConfig::lr_batch_rule,
           "How the learning rate follows the global batch B as it changes: sqrt (lr x sqrt(B / B1), for AdamW), "
           "linear (lr x B / B1) or none; B1 = m x K x W, the ramp's end or the adaptive start",
           choiceNames<LrBatchRule>());
    t.real("batch_adapt_threshold", &TrainConfig::batch_adapt_threshold,
           "batch_policy adaptive: grow once the critical batch estimate exceeds this many times the global batch");
    t.integer("batch_adapt_dwell_tokens", &TrainConfig::batch_adapt_dwell_tokens,
              "batch_policy adaptive: the token positions the estimate must stay above the threshold before K grows");
    t.integer("batch_adapt_factor", &TrainConfig::batch_adapt_factor,
              "batch_policy adaptive: K grows by this integer factor (less where batch_adapt_max_accumulation caps it)");
    t.integer("batch_adapt_max_accumulation", &TrainConfig::batch_adapt_max_accumulation,
              "batch_policy adaptive: the largest gradient_accumulation_steps the batch may grow to");
    t.boolean("noise_scale", &TrainConfig::noise_scale,
              "Estimate the gradient noise scale and the critical batch every step with K x W >= 2, from each "
              "micro-batch's own gradient (one squared norm per parameter per micro-batch; noise/* metrics)");
    t.integer("eval_every", &TrainConfig::eval_every, "Evaluate every N optimizer steps (0: never)");
    t.integer("eval_windows", &TrainConfig::eval_windows, "Validation windows per evaluation (0: all)");
    t.integer("sample_every", &TrainConfig::sample_every,
              "Write samples every N optimizer steps and at the end (0: never): the model continues each of "
              "sample_prompts; kept in the run store at their step (the Samples panel, `trainbench-cli samples`). "
              "Needs data.source text");
    t.text("sample_prompts", &TrainConfig::sample_prompts,
           "The prompts of sample_every, one per line; empty: one sample from the start of a document (after the "
           "end-of-text token)");
    t.integer("sample_tokens", &TrainConfig::sample_tokens, "New tokens per sample at most (the end-of-text token stops it sooner)");
    t.real("sample_temperature", &TrainConfig::sample_temperature,
           "Softmax temperature of the samples; 0: greedy (the same model, the same text), else drawn with train.seed "
           "and the step");
    t.integer("checkpoint_every", &TrainConfig::checkpoint_every, "Write a checkpoint every N optimizer steps (0: only at the end, see final_checkpoint)");
    t.integer("keep_checkpoints", &TrainConfig::keep_checkpoints, "Newest checkpoints kept; older ones are removed once a newer one is complete");
    t.boolean("final_checkpoint", &TrainConfig::final_checkpoint,
              "Write a checkpoint when the run ends, completed or stopped (false: only the checkpoint_every ones; a "
              "benchmark's or a throwaway run's large final write skipped)");
    t.integer("log_every", &TrainConfig::log_every, "Publish metrics every N optimizer steps");
    t.integer("max_bad_steps", &TrainConfig::max_bad_steps, "Consecutive non-finite steps tolerated before the run fails");

    Binder<DataConfig> d{"data", &RunConfig::data, &f};
    d.text("source", &DataConfig::source, "markov: synthetic language with a known loss floor; text: files as bytes or through data.tokenizer; tokens: .bin token ids; "
             "jsonl: JSON Lines files (.jsonl, .jsonl.gz, .jsonl.zst), one record a line; parquet: Parquet files, one record a row; "
             "hf_dataset: a Hugging Face dataset's save_to_disk() folder (its Arrow files, memory-mapped), one record a row", choiceNames<DataSource>());
    d.text("path", &DataConfig::path, "File or folder for the text, tokens, jsonl and parquet sources");
    f.push_back({{"data", "sources", "list", {},
                  "A mixture instead of data.path: a list of sources, each {\"path\": ..., \"weight\": w} with an optional "
                  "\"name\" (default: the path's file name), \"source\" (default data.source) and \"text_field\". Windows are "
                  "drawn from source i in the share w_i / sum(w), interleaved evenly and in the same order for every "
                  "split of the batch; each source is read in its own epochs and holds out its own data.val_fraction. "
                  "Empty: no mixture"},
                 [](const RunConfig& c) { return mixtureJson(c.data.sources); },
                 [](RunConfig& c, const json& v) { c.data.sources = readMixture("data.sources", v); }});
    d.text("val_path", &DataConfig::val_path, "Separate validation file (default: the tail of path)");
    d.real("val_fraction", &DataConfig::val_fraction, "Fraction held out for validation");
    d.integer("vocab_size", &DataConfig::vocab_size, "Markov vocabulary (0: the model's vocab_size)");
    d.integer("order", &DataConfig::order, "Markov order (context length of the chain)");
    d.real("concentration", &DataConfig::concentration, "Dirichlet concentration of the transition rows (small: predictable)");
    d.integer("seed", &DataConfig::seed, "Seed of the synthetic language");
    d.text("layout", &DataConfig::layout, "Text documents: packed (concatenated, each ending in byte 0) or padded (one per row, padding not counted)", choiceNames<RowLayout>());
    d.text("doc_separator", &DataConfig::doc_separator, "Splits text files into documents (default a blank line); empty: one document per file");
    d.text("tokenizer", &DataConfig::tokenizer,
           "text, jsonl, parquet, hf_dataset: a Hugging Face tokenizer.json (byte-level BPE, as GPT-2, Llama 3, Qwen and DeepSeek ship) or a "
           "SentencePiece .model; each document becomes its tokens and the tokenizer's end-of-text token, tokenised once "
           "on every core into a cache beside the run store (TRAINBENCH_TOKEN_CACHE overrides); model.vocab_size must "
           "cover it. Empty: the bytes (ids 0-255, byte 0 ending documents)");
    d.text("dtype", &DataConfig::dtype, "Element type of a tokens file", choiceNames<TokenWidth>());
    d.text("text_field", &DataConfig::text_field,
           "jsonl, parquet, hf_dataset: the field (column) holding each record's document text");
    d.text("prompt_field", &DataConfig::prompt_field,
           "jsonl, parquet, hf_dataset: with completion_field, records are prompt/completion pairs; the prompt's tokens are "
           "inputs but not targets (not in the loss, not in the token count), the completion and its end token count");
    d.text("completion_field", &DataConfig::completion_field, "jsonl, parquet, hf_dataset: the completion of a pair (see prompt_field)");

    Binder<RuntimeConfig> r{"runtime", &RunConfig::runtime, &f};
    r.text("device", &RuntimeConfig::device, "auto, cpu, cuda, or cuda:0,1");
    r.integer("world_size", &RuntimeConfig::world_size, "Data-parallel ranks (W)");
    r.text("dtype", &RuntimeConfig::dtype,
           "Compute precision; master weights and gradients stay fp32. fp8: DeepSeek-V3's recipe, the MLA projections "
           "and every MLP's products on block-scaled E4M3 operands, their inputs kept in fp8 for the backward (on a CPU "
           "emulated exactly, on CUDA compute capability 9.0); embedding, head, router, norms and attention stay in "
           "higher precision. auto: bf16 on a GPU, and on a CPU with AVX-512 BF16 or AMX for models of dim >= 256; "
           "fp32 otherwise",
           choiceNames<ComputeDtype>());
    r.text("optimizer_dtype", &RuntimeConfig::optimizer_dtype,
           "Storage of the AdamW moments: fp32, or bf16 (4 bytes a parameter instead of 8; the update is computed "
           "in fp32 and the moments rounded back, as DeepSeek-V3 did); master weights and gradients stay fp32",
           choiceNames<OptimizerDtype>());
    r.text("gradient_sum_dtype", &RuntimeConfig::gradient_sum_dtype,
           "ZeRO stages 2 and 3: the dtype each rank's gradient slice sums are kept and added in, wherever they wait "
           "(device, host memory, offload_dir): fp32, or bf16 (2 bytes a parameter's slice instead of 4; each "
           "micro-batch's reduced fp32 gradients are added into the bf16 sum and rounded, K roundings a window). "
           "Stages 0 and 1 keep no slice sums (their gradients accumulate in fp32 buckets): there it changes nothing",
           choiceNames<GradientSumDtype>());
    r.real("comm_timeout_s", &RuntimeConfig::comm_timeout_s, "Seconds a collective may wait before the run fails");
    r.integer("threads", &RuntimeConfig::threads, "Intra-op CPU threads per rank (0: cores / world_size)");
    r.integer("memory_limit_mb", &RuntimeConfig::memory_limit_mb,
              "Per-rank memory budget in MiB (0: none): tracked CPU tensor bytes, or the CUDA caching allocator's cap; "
              "a window that exceeds it halves the micro-batch and redoes the step");
    r.real("store_wait_s", &RuntimeConfig::store_wait_s,
           "Seconds a run waits, held, for an unwritable run store (full disk, read-only) before it fails");
    r.integer("zero_stage", &RuntimeConfig::zero_stage,
              "Sharded training state (ZeRO): 0 none; 1 the AdamW moments sharded over the ranks (8P/W bytes each "
              "instead of 8P): gradients reduce-scattered at the window's end, each rank steps its slice, the "
              "weights all-gathered; 2 the gradients too (4P/W): every micro-batch's buckets reduce-scattered "
              "during its backward and freed; 3 the weights too (4P/W): each unit's weights (the embedding, each block, "
              "the head) all-gathered before its forward and again before its backward, released after, its "
              "gradients reduce-scattered; the same numbers as 0");
    r.integer("expert_parallel", &RuntimeConfig::expert_parallel,
              "Expert parallelism (EP): groups of EP consecutive ranks divide the routed experts of every MoE layer "
              "(n_routed_experts / EP each) and send each token to its experts' rank and back by all-to-all; expert "
              "gradients are summed over the world_size / EP ranks that hold the same experts. Divides world_size "
              "and n_routed_experts; 1: every rank holds every expert");
    r.text("activation_checkpointing", &RuntimeConfig::activation_checkpointing,
           "Recomputation: none keeps every block's activations for the backward; feedforward keeps only the "
           "input of each block's feed-forward part (MoE or dense MLP) and runs it again during the backward "
           "(attention keeps its activations); full does so for the whole block (least memory, about a third "
           "more compute)",
           choiceNames<Recomputation>());
    r.text("offload", &RuntimeConfig::offload,
           "Offload: none keeps the AdamW moments beside the gradients; optimizer keeps each rank's shard of them "
           "off the device between steps (host memory, or offload_dir's files) and steps it on the CPU, bucket by "
           "bucket (on a GPU rank the gradient slices come down to pinned host memory on a side stream once a step "
           "and the updated slices go back up); needs zero_stage >= 1 (at world_size 1 the same arithmetic as 0). "
           "The same numbers as none. "
           "all: the weights' shards too (zero_stage 3): each unit's gathered from the host account or offload_dir's "
           "file, the next unit's read while one is used",
           choiceNames<Offload>());
    r.text("offload_dir", &RuntimeConfig::offload_dir,
           "With offload optimizer or all: a directory on a local disk (NVMe) where each rank keeps its moments in a "
           "scratch file, read and written around the page cache (O_DIRECT, libaio), the next bucket read while one "
           "steps; checked before the run (writable, O_DIRECT, room for the planned bytes); empty: host memory");
    r.text("window_schedule", &RuntimeConfig::window_schedule,
           "The order of an accumulation window's work: micro_batch runs each micro-batch through the whole model "
           "and then the next; unit runs every micro-batch of the window through one unit (the embedding, a "
           "block, the head) before the next unit, the backward likewise last unit first, keeping each unit's "
           "input per micro-batch and recomputing the block in its backward (needs activation_checkpointing "
           "full): under offload all each unit's weights are gathered twice a window instead of twice per "
           "micro-batch; the window keeps every block's input per micro-batch (on the device, or on a GPU in host "
           "memory when the device cannot). The same numbers bit for bit. auto: unit where the weights are streamed "
           "(offload all with activation_checkpointing full) and the window's inputs fit, else micro_batch",
           choiceNames<WindowSchedule>());
    r.optionalInteger("head_chunk_tokens", &RuntimeConfig::head_chunk_tokens,
                      "The output head and its cross-entropy over chunks of this many tokens, the gradients of the "
                      "hidden states and of the head's weight computed chunk by chunk in the forward pass, so that no "
                      "[tokens x vocab] logits outlive their chunk (the same loss and gradients within rounding). "
                      "\"auto\" or null: chunks whose logits are about the size of the micro-batch's hidden states, "
                      "ceil(tokens / ceil(vocab / dim)) rounded up to a power of two, at least 1,024 tokens; 0: the "
                      "whole micro-batch's logits at once (the plain head, for comparison)",
                      /*auto_word=*/true);
    r.text("tensorboard_dir", &RuntimeConfig::tensorboard_dir,
           "A folder for TensorBoard: rank 0 writes every scalar of the run (with its step and wall time), the config "
           "and the run's events there as event files while the run goes (`tensorboard --logdir` it). Empty: none");
    r.boolean("overlap_reduction", &RuntimeConfig::overlap_reduction,
              "With W > 1, all-reduce each gradient bucket as soon as the last backward has filled it, overlapping "
              "the rest of the backward (off: all buckets after it; same result)");

    Binder<TargetConfig> g{"target", &RunConfig::target, &f};
    g.text("kind", &TargetConfig::kind,
           "The machine `plan` and the batch panel plan for: here (this machine, as runtime says), a named GPU "
           "(its memory, peak and a node modelled on its DGX: docs/design/offload.md), or custom (device_memory_gib "
           "needed). A plan only: runtime says where a run trains",
           choiceNames<TargetKind>());
    g.integer("devices", &TargetConfig::devices, "Devices planned for, one rank each (0: runtime.world_size)");
    g.integer("devices_per_node", &TargetConfig::devices_per_node,
              "Devices a node holds: its host memory, NVMe and their bandwidth are shared by them (0: the kind's)");
    g.real("device_memory_gib", &TargetConfig::device_memory_gib, "Memory per device in GiB (0: the kind's)");
    g.real("host_memory_gib", &TargetConfig::host_memory_gib, "Host memory per node in GiB (0: the kind's)");
    g.real("nvme_gib", &TargetConfig::nvme_gib,
           "NVMe space per node in GiB for runtime.offload_dir (0: the kind's; here: the directory's free space)");
    g.real("compute_tflops", &TargetConfig::compute_tflops,
           "Dense peak per device in TFLOP/s at runtime.dtype (0: the kind's; here: unknown until `probe` measures it)");
    g.real("mfu", &TargetConfig::mfu, "The share of compute_tflops a training step reaches (0 < mfu <= 1)");
    g.real("pcie_gbps", &TargetConfig::pcie_gbps, "Host-device copy rate per device and direction, GB/s (0: the kind's)");
    g.real("interconnect_gbps", &TargetConfig::interconnect_gbps,
           "Collective bandwidth per device inside a node, GB/s (0: the kind's NVLink)");
    g.real("network_gbps", &TargetConfig::network_gbps,
           "Collective bandwidth per device between nodes, GB/s (0: the kind's, 400 Gb/s per GPU)");
    g.real("host_memory_gbps", &TargetConfig::host_memory_gbps,
           "Host memory bandwidth per node, GB/s, shared by its devices' CPU AdamW (0: the kind's; `probe` measures)");
    g.real("nvme_read_gbps", &TargetConfig::nvme_read_gbps, "NVMe read rate per node, GB/s (0: the kind's; `probe` measures)");
    g.real("nvme_write_gbps", &TargetConfig::nvme_write_gbps, "NVMe write rate per node, GB/s (0: the kind's; `probe` measures)");
    g.real("cpu_adamw_gparams", &TargetConfig::cpu_adamw_gparams,
           "The CPU AdamW step's rate per node, billions of parameters a second (0: only host_memory_gbps bounds it; "
           "`probe` measures the fused kernel)");
    return f;
}

size_t editDistance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

const std::vector<ConfigField>& configFields() {
    static const std::vector<ConfigField> fields = buildFields();
    return fields;
}

const ConfigField* findConfigField(const std::string& section, const std::string& key) {
    for (const auto& field : configFields())
        if (field.info.section == section && field.info.key == key) return &field;
    return nullptr;
}

const std::vector<ConfigFieldInfo>& configSchema() {
    static const std::vector<ConfigFieldInfo> infos = [] {
        std::vector<ConfigFieldInfo> out;
        const RunConfig defaults;
        for (const auto& field : configFields()) {
            out.push_back(field.info);
            out.back().default_json = field.get(defaults).dump();
        }
        return out;
    }();
    return infos;
}

std::string closestName(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    size_t best_distance = std::numeric_limits<size_t>::max();
    for (const auto& candidate : candidates) {
        size_t distance = editDistance(word, candidate);
        if (distance < best_distance) {
            best_distance = distance;
            best = candidate;
        }
    }
    // A suggestion is useful only when it is closer than a rewrite of half the word.
    if (best_distance > std::max<size_t>(2, word.size() / 2)) return "";
    return best;
}

}  // namespace trainbench
