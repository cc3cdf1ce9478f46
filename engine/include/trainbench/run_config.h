// RunConfig: the plain-C++ description of one training run (model, train, data, runtime).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainbench/config_choices.h"

namespace trainbench {

// The model section: the reference DeepSeek ModelArgs names and defaults, plus training-only keys.
struct ModelConfig {
    // Inference-only fields of the reference: kept so published configs load unchanged.
    int64_t max_batch_size = 8;  // KV-cache rows for decoding; never the training micro-batch
    int64_t max_seq_len = 16384; // also switches YaRN on when > original_seq_len
    std::string dtype = "bf16";  // storage of the published checkpoint ("bf16" | "fp8")
    std::optional<std::string> scale_fmt;

    int64_t vocab_size = 102400;
    int64_t dim = 2048;
    int64_t inter_dim = 10944;
    int64_t moe_inter_dim = 1408;
    int64_t n_layers = 27;
    int64_t n_dense_layers = 1;
    int64_t n_heads = 16;
    int64_t n_routed_experts = 64;
    int64_t n_shared_experts = 2;
    int64_t n_activated_experts = 6;
    int64_t n_expert_groups = 1;
    int64_t n_limited_groups = 1;
    std::string score_func = "softmax";
    double route_scale = 1.0;
    int64_t q_lora_rank = 0;
    int64_t kv_lora_rank = 512;
    int64_t qk_nope_head_dim = 128;
    int64_t qk_rope_head_dim = 64;
    int64_t v_head_dim = 128;
    int64_t original_seq_len = 4096;
    double rope_theta = 10000.0;
    double rope_factor = 40.0;
    double beta_fast = 32.0;
    double beta_slow = 1.0;
    double mscale = 1.0;

    // Training-only keys.
    std::optional<bool> gate_bias;  // unset: the reference rule (on when dim == 7168)
    double bias_update_speed = 0.001;
    double seq_aux_loss_alpha = 0.0001;
    double init_std = 0.006;
    // Multi-token prediction (DeepSeek-V3 section 2.2): D sequential modules after the main
    // model, module k predicting the token k + 1 ahead with the shared embedding and head
    // (model/mtp_module.h). 0: none.
    int64_t n_mtp_depth = 0;

    bool hasGateBias() const { return gate_bias.value_or(dim == 7168); }
    int64_t qkHeadDim() const { return qk_nope_head_dim + qk_rope_head_dim; }
    bool yarnActive() const { return max_seq_len > original_seq_len; }
};

// The train section. Steps are optimizer steps everywhere.
struct TrainConfig {
    int64_t micro_batch_size = 4;
    int64_t gradient_accumulation_steps = 1;
    std::optional<int64_t> global_batch_size;  // if set: must equal m * K * W
    int64_t seq_len = 128;
    int64_t steps = 200;
    // Train on exactly this many sequences instead (0: use steps). A multiple of m x W; when it
    // is not a multiple of the global batch the last window is incomplete (incomplete_window).
    int64_t samples = 0;
    // Or on this many token positions (sequences x seq_len; 0: use steps or samples): the run's
    // length when the batch changes, so it ends at the planned token count.
    int64_t tokens = 0;
    double lr = 3e-4;
    double min_lr = 3e-5;
    int64_t warmup_steps = 10;
    // The warm-up in token positions instead (0: use warmup_steps).
    int64_t warmup_tokens = 0;
    std::string schedule = "cosine";  // constant | cosine | linear
    double weight_decay = 0.1;
    double beta1 = 0.9;
    double beta2 = 0.95;
    double grad_clip = 1.0;  // 0 disables clipping
    // The multi-token-prediction loss's weight lambda (model.n_mtp_depth > 0): the objective is
    // L_main + lambda / D x sum_k L_k. DeepSeek-V3: 0.3 for the first 10T tokens, then 0.1; a
    // window starting at or after mtp_loss_weight_switch_tokens token positions (0: never) uses
    // mtp_loss_weight_after.
    double mtp_loss_weight = 0.3;
    double mtp_loss_weight_after = 0.1;
    int64_t mtp_loss_weight_switch_tokens = 0;
    double mtpLossWeightAt(int64_t tokens_before) const {
        return mtp_loss_weight_switch_tokens > 0 && tokens_before >= mtp_loss_weight_switch_tokens ? mtp_loss_weight_after
                                                                                                  : mtp_loss_weight;
    }
    int64_t seed = 0;
    // Start from these weights instead of a fresh initialisation (empty: initialise): a Hugging
    // Face model directory, a checkpoint directory or a safetensors file of reference names.
    std::string init_from;
    std::string loss_normalization = "tokens";
    std::string incomplete_window = "scale";  // scale | drop
    bool sync_each_micro_batch = false;
    // The gradient noise scale and the critical batch, every step with two micro-batches or
    // more a window over the ranks (docs/design/noise_scale.md): a squared norm per parameter per micro-batch.
    bool noise_scale = true;
    // The global batch over the run (m fixed, K changing: memory does not change): "fixed", or
    // "ramp" from batch_ramp_start sequences to m x K x W over the first batch_ramp_tokens
    // tokens (Megatron's rampup, DeepSeek-V3's 3,072 -> 15,360), in multiples of m x W. The
    // learning rate follows lr_batch_rule as B changes: sqrt (for AdamW), linear or none.
    std::string batch_policy = "fixed";
    int64_t batch_ramp_start = 0;
    int64_t batch_ramp_tokens = 0;
    std::string lr_batch_rule = "sqrt";
    // "adaptive": K grows by an integer factor (batch_adapt_factor, at most) once the critical
    // batch estimate has stayed above batch_adapt_threshold x B for batch_adapt_dwell_tokens,
    // up to batch_adapt_max_accumulation micro-batches per rank (Merrill et al. 2025). Only grows.
    double batch_adapt_threshold = 2.0;
    int64_t batch_adapt_dwell_tokens = 0;
    int64_t batch_adapt_factor = 2;
    int64_t batch_adapt_max_accumulation = 0;
    int64_t eval_every = 0;  // 0: no periodic evaluation
    int64_t eval_windows = 16;
    // Samples as the run goes (nanoGPT's habit): every sample_every steps and at the end, the
    // model continues each line of sample_prompts (none: one sample from the start of a
    // document) by up to sample_tokens tokens, greedily at sample_temperature 0; stored as
    // "sample" events (trainbench/run_sample.h). Needs data.source text.
    int64_t sample_every = 0;
    std::string sample_prompts;
    int64_t sample_tokens = 48;
    double sample_temperature = 0.0;
    int64_t checkpoint_every = 0;
    int64_t keep_checkpoints = 3;
    bool final_checkpoint = true;  // false: no checkpoint when the run ends (completed or stopped)
    int64_t log_every = 1;
    int64_t max_bad_steps = 5;
};

// The data section. `markov` needs no file; `text` and `tokens` read `path`.
// One source of a mixture (data.sources): files read as data.source reads them (or as its own
// `source`), drawn in proportion to `weight`; every other data.* setting is shared.
struct DataMixtureSource {
    std::string name;        // in metrics and the summary; "": the path's file name
    std::string source;      // "": data.source
    std::string path;
    double weight = 1.0;     // > 0; the shares are weight / (sum of the weights)
    std::string text_field;  // "": data.text_field
};

struct DataConfig {
    std::string source = "markov";  // markov | text | tokens | jsonl | parquet | hf_dataset
    std::string path;
    std::string val_path;
    double val_fraction = 0.05;
    // markov
    int64_t vocab_size = 0;  // 0: the model's vocab_size
    int64_t order = 1;
    double concentration = 0.1;
    int64_t seed = 1234;
    // text
    std::string layout = "packed";      // packed | padded
    std::string doc_separator = "\n\n";  // splits a file into documents; "": one document per file
    // A Hugging Face tokenizer.json (byte-level BPE) or a SentencePiece .model; empty: bytes.
    std::string tokenizer;
    // tokens
    std::string dtype = "uint16";  // uint16 | uint32
    // jsonl, parquet: each record (a JSON object, a Parquet row) is a document, its text in
    // text_field; or, with prompt_field and completion_field set, a pair whose prompt tokens
    // are inputs but never targets (not in the loss, not in the token count).
    std::string text_field = "text";
    std::string prompt_field;
    std::string completion_field;
    // A mixture: several document sources drawn by weight (data/mixture_source.h); empty: the
    // one source data.path names.
    std::vector<DataMixtureSource> sources;
};

struct RuntimeConfig {
    std::string device = "cpu";  // auto | cpu | cuda | cuda:0,1
    int64_t world_size = 1;
    std::string dtype = "fp32";  // fp32 | bf16 | fp8 | auto (trainbench/compute_dtype.h)
    // The AdamW moments' storage: fp32, or bf16 as DeepSeek-V3 kept them (the update itself is
    // computed in fp32 and the moments rounded back; master weights and gradients stay fp32).
    std::string optimizer_dtype = "fp32";
    // ZeRO stages 2 and 3: the dtype each rank's gradient slice sums are kept and added in,
    // wherever they wait (device, host memory, offload_dir). bf16 halves their bytes and rounds
    // every micro-batch's addition; each micro-batch's gradients are still reduced in fp32.
    // Stages 0 and 1 keep no slice sums: there it changes nothing (so the planner's advice may
    // choose any stage for a config that asks for it).
    std::string gradient_sum_dtype = "fp32";
    double comm_timeout_s = 300.0;
    int64_t threads = 0;  // intra-op threads per rank; 0: all cores / world_size
    int64_t memory_limit_mb = 0;
    double store_wait_s = 600.0;  // a run held by an unwritable store fails after this long
    bool overlap_reduction = true;  // reduce gradient buckets during the last backward
    // ZeRO: 0 every rank holds all training state; 1 the AdamW moments are sharded over the
    // ranks (reduce-scatter of the gradients, each rank steps its slice, all-gather of weights);
    // 2 the gradients too (each micro-batch's buckets reduce-scattered and freed); 3 the weights
    // too (each unit gathered for its forward and its backward, released after).
    int64_t zero_stage = 0;
    // Expert parallelism: the routed experts divided among groups of this many ranks (each rank
    // holds n_routed_experts / expert_parallel of every MoE layer; tokens travel to their experts
    // by all-to-all). 1: every rank holds every expert.
    int64_t expert_parallel = 1;
    // "none" | "feedforward" (each block's feed-forward part runs again in the backward) | "full"
    // (each block keeps only its input and runs its whole forward again in the backward).
    std::string activation_checkpointing = "none";
    // "none" | "optimizer": each rank's shard of the AdamW moments lives off the device between
    // steps, stepped on the CPU: in host memory, or with offload_dir in a scratch file there
    // (the NVMe tier, read and written with O_DIRECT, bucket by bucket).
    // "all": the weights too (zero_stage 3: each unit's shard comes from host memory or
    // offload_dir for its gather, the next unit's read ahead).
    std::string offload = "none";
    std::string offload_dir;
    // The order of a window's work: "micro_batch" (each micro-batch through the whole model, then
    // the next), "unit" (every micro-batch of the window through one unit of the model, then the
    // next unit; the backward likewise, last unit first: under offload all each unit's weights
    // cross twice a window, not 2K times), or "auto" (unit where weights are streamed).
    std::string window_schedule = "micro_batch";
    // The output head and its cross-entropy run over chunks of this many tokens, the gradients
    // computed in the same pass, so no [tokens x vocab] logits outlive a chunk (model/
    // chunked_head_loss.h). nullopt ("auto" or null in JSON): trainbench/head_chunk.h's rule;
    // 0: the whole micro-batch's logits at once, as a plain head and loss compute them.
    std::optional<int64_t> head_chunk_tokens;
    // A folder TensorBoard reads: rank 0 writes the run's scalars, config and events there as
    // event files while the run goes. Empty: none.
    std::string tensorboard_dir;
};

// The machine a plan is for (`plan`, the batch panel): the one at hand ("here", what runtime
// says), or `devices` GPUs of a named kind. It changes no run: runtime says where a run trains.
// Every figure 0 takes the kind's (trainbench/target_machine.h); `trainbench-cli probe`
// measures this machine's.
struct TargetConfig {
    std::string kind = "here";  // here | a100-40 | a100-80 | h100-80 | h200-141 | b200-180 | custom
    int64_t devices = 0;           // 0: runtime.world_size
    int64_t devices_per_node = 0;  // 0: the kind's (8; here: every rank on this machine)
    double device_memory_gib = 0;  // per device; custom needs it
    double host_memory_gib = 0;    // per node
    double nvme_gib = 0;           // per node, for runtime.offload_dir
    double compute_tflops = 0;     // per device, dense, in runtime.dtype
    double mfu = 0.4;              // the share of compute_tflops a step reaches
    double pcie_gbps = 0;          // per device and direction
    double interconnect_gbps = 0;  // per device and direction, inside a node
    double network_gbps = 0;       // per device and direction, between nodes
    double host_memory_gbps = 0;   // per node, shared by its devices
    double nvme_read_gbps = 0;     // per node
    double nvme_write_gbps = 0;    // per node
    // The CPU AdamW's rate per node, billions of parameters a second (0: bounded by
    // host_memory_gbps alone; `probe` measures the fused kernel's)
    double cpu_adamw_gparams = 0;
};

// The choice fields read as enums (trainbench/config_choices.h); a name outside the field's
// table throws std::invalid_argument, which a validated config never does.
inline ScoreFunction scoreFunction(const ModelConfig& m) { return parseChoice<ScoreFunction>(m.score_func); }
inline LrSchedule lrSchedule(const TrainConfig& t) { return parseChoice<LrSchedule>(t.schedule); }
inline IncompleteWindow incompleteWindow(const TrainConfig& t) { return parseChoice<IncompleteWindow>(t.incomplete_window); }
inline BatchPolicy batchPolicy(const TrainConfig& t) { return parseChoice<BatchPolicy>(t.batch_policy); }
inline LrBatchRule lrBatchRule(const TrainConfig& t) { return parseChoice<LrBatchRule>(t.lr_batch_rule); }
inline DataSource dataSource(const DataConfig& d) { return parseChoice<DataSource>(d.source); }
// Sources of documents (text, jsonl, parquet): data.tokenizer, data.layout and the validation
// split by documents apply; their text can be sampled and prompts encoded.
// Never throws: safe on a config not validated yet.
inline bool readsDocuments(const DataConfig& d) {
    return isChoice(d.source, DataSource::Text) || isChoice(d.source, DataSource::Jsonl) ||
           isChoice(d.source, DataSource::Parquet) || isChoice(d.source, DataSource::HfDataset);
}
// jsonl and parquet records as prompt/completion pairs (else one text field each).
inline bool readsPairs(const DataConfig& d) { return !d.prompt_field.empty() || !d.completion_field.empty(); }
inline RowLayout rowLayout(const DataConfig& d) { return parseChoice<RowLayout>(d.layout); }
inline TokenWidth tokenWidth(const DataConfig& d) { return parseChoice<TokenWidth>(d.dtype); }
inline ComputeDtype computeDtype(const RuntimeConfig& r) { return parseChoice<ComputeDtype>(r.dtype); }
inline OptimizerDtype optimizerDtype(const RuntimeConfig& r) { return parseChoice<OptimizerDtype>(r.optimizer_dtype); }
inline GradientSumDtype gradientSumDtype(const RuntimeConfig& r) { return parseChoice<GradientSumDtype>(r.gradient_sum_dtype); }
inline Recomputation recomputation(const RuntimeConfig& r) { return parseChoice<Recomputation>(r.activation_checkpointing); }
inline Offload offload(const RuntimeConfig& r) { return parseChoice<Offload>(r.offload); }
inline WindowSchedule windowSchedule(const RuntimeConfig& r) { return parseChoice<WindowSchedule>(r.window_schedule); }
inline TargetKind targetKind(const TargetConfig& t) { return parseChoice<TargetKind>(t.kind); }


struct RunConfig {
    ModelConfig model;
    TrainConfig train;
    DataConfig data;
    RuntimeConfig runtime;
    TargetConfig target;

    // m * K * W, in sequences.
    int64_t globalBatch() const {
        return train.micro_batch_size * train.gradient_accumulation_steps * runtime.world_size;
    }
    int64_t tokensPerStep() const { return globalBatch() * train.seq_len; }
    // The sequences the run reads when its length is given in samples or tokens; 0 otherwise.
    int64_t plannedSamples() const {
        if (train.samples > 0) return train.samples;
        return train.tokens > 0 && train.seq_len > 0 ? train.tokens / train.seq_len : 0;
    }
    // Micro-batches per rank in the last window when the planned samples leave it incomplete;
    // 0 when every window is complete. Under batch_policy fixed (BatchSchedule for any policy).
    int64_t lastWindowMicroBatches() const {
        if (plannedSamples() <= 0 || train.micro_batch_size <= 0 || runtime.world_size <= 0) return 0;
        return (plannedSamples() / (train.micro_batch_size * runtime.world_size)) % train.gradient_accumulation_steps;
    }
    // The optimizer steps a fixed-batch run takes: train.steps, or the windows the planned
    // samples fill (the incomplete last one counted when train.incomplete_window is "scale").
    // BatchSchedule::plannedSteps answers for every batch_policy.
    int64_t optimizerSteps() const {
        if (plannedSamples() <= 0 || globalBatch() <= 0) return train.steps;
        const int64_t full = plannedSamples() / globalBatch();
        return full + (lastWindowMicroBatches() > 0 && isChoice(train.incomplete_window, IncompleteWindow::Scale) ? 1 : 0);
    }
};

}  // namespace trainbench

// Floor: config/ (engine/README.md)
