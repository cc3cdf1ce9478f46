// Cross-field validation of a run config: every rule, with the field, the value and a fix.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "trainbench/config_io.h"
#include "trainbench/divisors.h"

namespace trainbench {
namespace {

std::string num(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}
std::string num(int64_t v) { return std::to_string(v); }

class Checker {
public:
    std::vector<ConfigIssue> issues;

    void fail(const std::string& path, const std::string& value, const std::string& rule, const std::string& fix) {
        issues.push_back({path, path + " (" + value + "): " + rule + "; " + fix});
    }
    void atLeast(const std::string& path, int64_t value, int64_t minimum) {
        if (value < minimum) fail(path, num(value), "must be >= " + num(minimum), "set it to " + num(minimum) + " or more");
    }
    void within(const std::string& path, int64_t value, int64_t lo, int64_t hi, const std::string& why) {
        if (value >= lo && value <= hi) return;
        fail(path, num(value), "must be between " + num(lo) + " and " + num(hi) + " (" + why + ")",
             value < lo ? "set it to " + num(lo) + " or more" : "set it to at most " + num(hi));
    }
    void positive(const std::string& path, double value) {
        if (!(value > 0) || !std::isfinite(value)) fail(path, num(value), "must be a finite number > 0", "use a positive value");
    }
    void nonNegative(const std::string& path, double value) {
        if (!(value >= 0) || !std::isfinite(value)) fail(path, num(value), "must be a finite number >= 0", "use 0 or a positive value");
    }
    // The field's names come from its table (trainbench/config_choices.h).
    template <class E> void oneOf(const std::string& path, const std::string& value) {
        std::string list;
        for (const std::string& o : choiceNames<E>()) {
            if (value == o) return;
            list += list.empty() ? o : ", " + o;
        }
        fail(path, "\"" + value + "\"", "must be one of " + list, "pick one of those");
    }
};

std::string joinInts(const std::vector<int64_t>& values) {
    std::string s;
    for (auto v : values) s += (s.empty() ? "" : ", ") + std::to_string(v);
    return s;
}


// The range of every count of the config (the data section's, with the data rules), checked
// before any arithmetic with it: each maximum is far beyond what any published model or run
// uses, and low enough that the products the engine forms (m x K x W, tokens per step,
// parameters and bytes) stay exact in 64 bits.
constexpr int64_t kMaxRanks = int64_t(1) << 20;        // the largest clusters: ~100,000 GPUs
constexpr int64_t kMaxBatchCount = int64_t(1) << 20;   // m, K: DeepSeek-V3's batch is 15,360 sequences
constexpr int64_t kMaxSeqLen = int64_t(1) << 24;       // 16M positions: longest contexts are ~10M
constexpr int64_t kMaxWidth = int64_t(1) << 20;        // dim, low ranks, head dims: the widest models ~25,000
constexpr int64_t kMaxHidden = int64_t(1) << 22;       // MLP hidden sizes
constexpr int64_t kMaxLayers = int64_t(1) << 14;       // deepest published ~130
constexpr int64_t kMaxExperts = int64_t(1) << 16;      // most experts per layer published ~400
constexpr int64_t kMaxVocab = (int64_t(1) << 31) - 1;  // token ids fit int32 (uint32 files): largest ~260k
constexpr int64_t kMaxSteps = int64_t(1) << 40;
constexpr int64_t kMaxTokens = int64_t(1) << 53;       // 9e15: 250x the largest runs (~3.6e13 tokens)

void checkRanges(Checker& c, const RunConfig& config) {
    const ModelConfig& m = config.model;
    c.within("model.vocab_size", m.vocab_size, 2, kMaxVocab, "token ids of 32-bit files");
    c.within("model.dim", m.dim, 1, kMaxWidth, "2^20");
    c.within("model.inter_dim", m.inter_dim, 1, kMaxHidden, "2^22");
    c.within("model.moe_inter_dim", m.moe_inter_dim, 1, kMaxHidden, "2^22");
    c.within("model.n_layers", m.n_layers, 1, kMaxLayers, "2^14");
    c.within("model.n_dense_layers", m.n_dense_layers, 0, kMaxLayers, "2^14");
    c.within("model.n_heads", m.n_heads, 1, kMaxLayers, "2^14");
    c.within("model.n_routed_experts", m.n_routed_experts, 1, kMaxExperts, "2^16");
    c.within("model.n_shared_experts", m.n_shared_experts, 0, kMaxExperts, "2^16");
    c.within("model.n_activated_experts", m.n_activated_experts, 1, kMaxExperts, "2^16");
    c.within("model.n_expert_groups", m.n_expert_groups, 1, kMaxExperts, "2^16");
    c.within("model.n_limited_groups", m.n_limited_groups, 1, kMaxExperts, "2^16");
    c.within("model.q_lora_rank", m.q_lora_rank, 0, kMaxWidth, "2^20");
    c.within("model.kv_lora_rank", m.kv_lora_rank, 1, kMaxWidth, "2^20");
    c.within("model.qk_nope_head_dim", m.qk_nope_head_dim, 0, kMaxWidth, "2^20");
    c.within("model.qk_rope_head_dim", m.qk_rope_head_dim, 2, kMaxWidth, "2^20");
    c.within("model.v_head_dim", m.v_head_dim, 1, kMaxWidth, "2^20");
    c.within("model.max_seq_len", m.max_seq_len, 1, kMaxSeqLen, "2^24 positions");
    c.within("model.original_seq_len", m.original_seq_len, 1, kMaxSeqLen, "2^24 positions");
    c.within("model.max_batch_size", m.max_batch_size, 1, kMaxBatchCount, "2^20");
    c.within("model.n_mtp_depth", m.n_mtp_depth, 0, kMaxLayers, "2^14");
    const TrainConfig& t = config.train;
    c.within("train.micro_batch_size", t.micro_batch_size, 1, kMaxBatchCount, "2^20 sequences");
    c.within("train.gradient_accumulation_steps", t.gradient_accumulation_steps, 1, kMaxBatchCount, "2^20");
    if (t.global_batch_size)
        c.within("train.global_batch_size", *t.global_batch_size, 1, kMaxBatchCount * kMaxBatchCount * kMaxRanks,
                 "2^60 sequences");
    c.within("train.seq_len", t.seq_len, 1, kMaxSeqLen, "2^24 positions");
    c.within("train.steps", t.steps, 1, kMaxSteps, "2^40");
    c.within("train.samples", t.samples, 0, kMaxTokens, "2^53");
    c.within("train.tokens", t.tokens, 0, kMaxTokens, "2^53, 250 times the largest runs");
    c.within("train.warmup_steps", t.warmup_steps, 0, kMaxSteps, "2^40");
    c.within("train.warmup_tokens", t.warmup_tokens, 0, kMaxTokens, "2^53");
    c.within("train.batch_ramp_start", t.batch_ramp_start, 0, kMaxBatchCount * kMaxBatchCount * kMaxRanks,
             "2^60 sequences");
    c.within("train.batch_ramp_tokens", t.batch_ramp_tokens, 0, kMaxTokens, "2^53");
    c.within("train.batch_adapt_dwell_tokens", t.batch_adapt_dwell_tokens, 0, kMaxTokens, "2^53");
    c.within("train.batch_adapt_factor", t.batch_adapt_factor, 0, 1024, "2^10");
    c.within("train.batch_adapt_max_accumulation", t.batch_adapt_max_accumulation, 0, kMaxBatchCount, "2^20");
    c.within("train.eval_every", t.eval_every, 0, kMaxSteps, "2^40");
    c.within("train.eval_windows", t.eval_windows, 0, int64_t(1) << 31, "2^31");
    c.within("train.sample_every", t.sample_every, 0, kMaxSteps, "2^40");
    c.within("train.sample_tokens", t.sample_tokens, 1, kMaxSeqLen, "2^24 positions");
    c.within("train.checkpoint_every", t.checkpoint_every, 0, kMaxSteps, "2^40");
    c.within("train.keep_checkpoints", t.keep_checkpoints, 1, int64_t(1) << 20, "2^20");
    c.within("train.log_every", t.log_every, 1, kMaxSteps, "2^40");
    c.within("train.max_bad_steps", t.max_bad_steps, 1, kMaxSteps, "2^40");
    const RuntimeConfig& r = config.runtime;
    c.within("runtime.world_size", r.world_size, 1, kMaxRanks, "2^20 ranks, ten times the largest clusters");
    c.within("runtime.expert_parallel", r.expert_parallel, 1, kMaxRanks, "2^20 ranks");
    c.within("runtime.threads", r.threads, 0, int64_t(1) << 16, "2^16");
    c.within("runtime.memory_limit_mb", r.memory_limit_mb, 0, int64_t(1) << 40, "2^40 MiB");
    if (r.head_chunk_tokens)
        c.within("runtime.head_chunk_tokens", *r.head_chunk_tokens, 0, int64_t(1) << 40, "2^40 tokens; 0: the whole head");
}

// The sizes the engine derives, once every count is in range: computed in 128 bits, each
// bounded where 64-bit arithmetic downstream (the planner, the schedules, token counters) stays
// exact with room to spare. An excess names the fields of the product.
void checkScale(Checker& c, const RunConfig& config) {
    using Wide = __int128;
    const ModelConfig& m = config.model;
    const TrainConfig& t = config.train;
    const Wide W = config.runtime.world_size, T = t.seq_len;
    const Wide global = Wide(t.micro_batch_size) * t.gradient_accumulation_steps * W;
    const Wide per_step = global * T;
    auto show = [](Wide v) {  // exact, in decimal digits
        std::string digits;
        do {
            digits.insert(digits.begin(), char('0' + int(v % 10)));
            v /= 10;
        } while (v > 0);
        return digits;
    };
    if (per_step > (Wide(1) << 40))
        c.issues.push_back({"train.micro_batch_size",
                            "train.micro_batch_size x gradient_accumulation_steps x runtime.world_size x "
                            "train.seq_len = " + show(per_step) + " tokens per optimizer step, more than 2^40 "
                            "(DeepSeek-V3 trained on 63 million); lower one of them"});
    else if (Wide(t.steps) * per_step > (Wide(1) << 53))
        c.issues.push_back({"train.steps", "train.steps (" + num(t.steps) + ") x " + show(per_step) +
                                               " tokens per step = " + show(Wide(t.steps) * per_step) +
                                               " tokens, more than 2^53 (250 times the largest runs); lower train.steps"});
    if (Wide(t.samples) * T > (Wide(1) << 53))
        c.issues.push_back({"train.samples", "train.samples (" + num(t.samples) + ") x train.seq_len (" + num(t.seq_len) +
                                                 ") is more than 2^53 tokens; lower train.samples"});
    // The parameters, from the shapes (an upper bound of model/param_count's exact count).
    const Wide d = m.dim, h = m.n_heads, qk = Wide(m.qk_nope_head_dim) + m.qk_rope_head_dim;
    const Wide attention = d * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim) +
                           (m.q_lora_rank + 1 + d) * h * qk + Wide(m.kv_lora_rank) * h * (m.qk_nope_head_dim + m.v_head_dim) +
                           h * m.v_head_dim * d + 4 * d + m.q_lora_rank + m.kv_lora_rank;
    const Wide experts = Wide(m.n_routed_experts + m.n_shared_experts) * 3 * d * m.moe_inter_dim + Wide(m.n_routed_experts) * (d + 1);
    const Wide block = attention + std::max(experts, 3 * d * m.inter_dim);
    const Wide parameters = 2 * Wide(m.vocab_size) * d + d + Wide(m.n_layers) * block;
    if (parameters > (Wide(1) << 48))
        c.issues.push_back({"model.dim", "the model has about " + show(parameters) +
                                             " parameters (model.vocab_size, dim, n_layers, n_routed_experts, "
                                             "moe_inter_dim, ...), more than 2^48 (a hundred times the largest "
                                             "published); make it smaller"});
    // One micro-batch's activations on a rank: a generous bound of the planner's count per token
    // (every tensor a block saves, attention's probabilities included, in 4-byte floats).
    const Wide k = m.n_activated_experts, hidden = std::max<Wide>(m.inter_dim, (k + m.n_shared_experts) * m.moe_inter_dim);
    const Wide per_token = 4 * (Wide(m.n_layers) * (16 * d + 8 * h * (qk + m.v_head_dim + T) + 4 * (m.q_lora_rank + m.kv_lora_rank) +
                                                    8 * k * d + 4 * hidden + m.n_routed_experts + 64 * k) +
                                m.vocab_size + 8 * d + 16);
    const Wide activations = per_token * t.micro_batch_size * T;
    if (activations > (Wide(1) << 56))
        c.issues.push_back({"train.micro_batch_size",
                            "one micro-batch (train.micro_batch_size " + num(t.micro_batch_size) + " x train.seq_len " +
                                num(t.seq_len) + ") of this model would hold about " + show(activations) +
                                " bytes of activations, more than 2^56 (64 PiB); lower micro_batch_size or seq_len"});
}

void checkModel(Checker& c, const ModelConfig& m) {
    if (m.n_dense_layers > m.n_layers)
        c.fail("model.n_dense_layers", num(m.n_dense_layers), "must be <= model.n_layers (" + num(m.n_layers) + ")",
               "lower n_dense_layers or raise n_layers");
    if (m.n_activated_experts > m.n_routed_experts)
        c.fail("model.n_activated_experts", num(m.n_activated_experts),
               "must be <= model.n_routed_experts (" + num(m.n_routed_experts) + ")",
               "choose at most " + num(m.n_routed_experts) + " experts per token");
    if (m.n_expert_groups >= 1 && m.n_routed_experts >= 1 && m.n_routed_experts % m.n_expert_groups != 0)
        c.fail("model.n_expert_groups", num(m.n_expert_groups),
               "must divide model.n_routed_experts (" + num(m.n_routed_experts) + ")",
               "use a divisor of " + num(m.n_routed_experts) + ": " + joinInts(divisorsOf(m.n_routed_experts)));
    if (m.n_limited_groups > m.n_expert_groups)
        c.fail("model.n_limited_groups", num(m.n_limited_groups),
               "must be <= model.n_expert_groups (" + num(m.n_expert_groups) + ")",
               "lower n_limited_groups to at most " + num(m.n_expert_groups));
    if (m.n_expert_groups >= 1 && m.n_limited_groups >= 1 && m.n_limited_groups <= m.n_expert_groups &&
        m.n_routed_experts % m.n_expert_groups == 0) {
        int64_t reachable = m.n_limited_groups * (m.n_routed_experts / m.n_expert_groups);
        if (m.n_activated_experts > reachable)
            c.fail("model.n_activated_experts", num(m.n_activated_experts),
                   "must be reachable within model.n_limited_groups groups (" + num(reachable) + " experts)",
                   "raise n_limited_groups or lower n_activated_experts to " + num(reachable));
    }
    c.oneOf<ScoreFunction>("model.score_func", m.score_func);
    c.positive("model.route_scale", m.route_scale);
    if (m.qk_rope_head_dim % 2 != 0)
        c.fail("model.qk_rope_head_dim", num(m.qk_rope_head_dim), "must be even (rotary pairs)",
               "use " + num(m.qk_rope_head_dim + 1));
    c.positive("model.rope_theta", m.rope_theta);
    c.positive("model.rope_factor", m.rope_factor);
    c.positive("model.beta_fast", m.beta_fast);
    c.positive("model.beta_slow", m.beta_slow);
    c.positive("model.mscale", m.mscale);
    c.oneOf<CheckpointDtype>("model.dtype", m.dtype);
    c.nonNegative("model.bias_update_speed", m.bias_update_speed);
    c.nonNegative("model.seq_aux_loss_alpha", m.seq_aux_loss_alpha);
    c.positive("model.init_std", m.init_std);
}

void checkTrain(Checker& c, const RunConfig& config) {
    const TrainConfig& t = config.train;
    if (t.seq_len > config.model.max_seq_len)
        c.fail("train.seq_len", num(t.seq_len), "must be <= model.max_seq_len (" + num(config.model.max_seq_len) + ")",
               "shorten seq_len or raise model.max_seq_len");
    c.nonNegative("train.lr", t.lr);
    c.nonNegative("train.min_lr", t.min_lr);
    if (t.min_lr > t.lr)
        c.fail("train.min_lr", num(t.min_lr), "must be <= train.lr (" + num(t.lr) + ")", "lower min_lr");
    c.oneOf<LrSchedule>("train.schedule", t.schedule);
    c.nonNegative("train.weight_decay", t.weight_decay);
    if (!(t.beta1 >= 0 && t.beta1 < 1)) c.fail("train.beta1", num(t.beta1), "must be in [0, 1)", "use e.g. 0.9");
    if (!(t.beta2 >= 0 && t.beta2 < 1)) c.fail("train.beta2", num(t.beta2), "must be in [0, 1)", "use e.g. 0.95");
    c.nonNegative("train.grad_clip", t.grad_clip);
    c.nonNegative("train.mtp_loss_weight", t.mtp_loss_weight);
    c.nonNegative("train.mtp_loss_weight_after", t.mtp_loss_weight_after);
    c.within("train.mtp_loss_weight_switch_tokens", t.mtp_loss_weight_switch_tokens, 0, kMaxTokens, "2^53");
    // Module k predicts position i + k + 1 from position i: a sequence needs more than D positions.
    if (config.model.n_mtp_depth > 0 && config.model.n_mtp_depth >= t.seq_len)
        c.fail("model.n_mtp_depth", num(config.model.n_mtp_depth),
               "must be below train.seq_len (" + num(t.seq_len) + "): depth k predicts seq_len - k targets a sequence",
               "lower n_mtp_depth or raise train.seq_len");
    c.atLeast("train.seed", t.seed, 0);
    c.oneOf<LossNormalization>("train.loss_normalization", t.loss_normalization);
    c.oneOf<IncompleteWindow>("train.incomplete_window", t.incomplete_window);
    c.oneOf<BatchPolicy>("train.batch_policy", t.batch_policy);
    c.oneOf<LrBatchRule>("train.lr_batch_rule", t.lr_batch_rule);
    if (!(t.sample_temperature >= 0 && t.sample_temperature <= 100))
        c.fail("train.sample_temperature", num(t.sample_temperature), "must be between 0 and 100",
               "use 0 for greedy samples or e.g. 0.8");
    if (t.sample_every > 0) {
        if (!readsDocuments(config.data))
            c.issues.push_back({"train.sample_every", "train.sample_every (" + num(t.sample_every) +
                                                          ") writes text, and data.source \"" + config.data.source +
                                                          "\" has none: use data.source \"text\", \"jsonl\" or \"parquet\", or set "
                                                          "train.sample_every to 0"});
        if (t.sample_tokens >= config.model.max_seq_len)
            c.fail("train.sample_tokens", num(t.sample_tokens),
                   "must be below model.max_seq_len (" + num(config.model.max_seq_len) + ") to leave room for the prompt",
                   "lower sample_tokens");
    }
    const int64_t ranks = config.runtime.world_size;
    const int64_t unit = t.micro_batch_size * ranks, global = t.micro_batch_size * t.gradient_accumulation_steps * ranks;
    if (isChoice(t.batch_policy, BatchPolicy::Ramp)) {
        if (t.batch_ramp_start < unit || t.batch_ramp_start > global)
            c.issues.push_back({"train.batch_ramp_start",
                                "train.batch_ramp_start (" + num(t.batch_ramp_start) + ") must lie between m x W = " +
                                    num(unit) + " and the global batch m x K x W = " + num(global) +
                                    " sequences; set it, for example, to " + num(std::max(unit, global / 4))});
        if (t.batch_ramp_tokens <= 0)
            c.issues.push_back({"train.batch_ramp_tokens", "train.batch_ramp_tokens (" + num(t.batch_ramp_tokens) +
                                                               ") must be positive: the tokens over which the batch grows"});
    } else if (t.batch_ramp_start > 0 || t.batch_ramp_tokens > 0) {
        c.issues.push_back({"train.batch_policy", "train.batch_ramp_start / batch_ramp_tokens are set but "
                                                  "train.batch_policy is \"" + t.batch_policy +
                                                  "\": set it to \"ramp\" or clear them"});
    }
    if (isChoice(t.batch_policy, BatchPolicy::Adaptive)) {
        const int64_t K = t.gradient_accumulation_steps;
        if (!(t.batch_adapt_threshold > 0))
            c.fail("train.batch_adapt_threshold", num(t.batch_adapt_threshold), "must be positive",
                   "use e.g. 2 (grow once the critical batch is twice the global batch)");
        if (t.batch_adapt_factor < 2)
            c.fail("train.batch_adapt_factor", num(t.batch_adapt_factor), "must be an integer >= 2",
                   "use 2 (double K each time)");
        if (t.batch_adapt_max_accumulation <= K)
            c.issues.push_back({"train.batch_adapt_max_accumulation",
                                "train.batch_adapt_max_accumulation (" + num(t.batch_adapt_max_accumulation) +
                                    ") must exceed train.gradient_accumulation_steps (" + num(K) +
                                    "): the largest K the adaptive batch may grow to; for example " + num(8 * K)});
        if (t.batch_adapt_dwell_tokens <= 0)
            c.issues.push_back({"train.batch_adapt_dwell_tokens",
                                "train.batch_adapt_dwell_tokens (" + num(t.batch_adapt_dwell_tokens) +
                                    ") must be positive: the tokens the critical batch must stay above the threshold "
                                    "before K grows; for example 20 steps' worth, " +
                                    num(20 * global * t.seq_len)});
        if (!t.noise_scale)
            c.issues.push_back({"train.noise_scale", "train.batch_policy adaptive follows the critical batch: set "
                                                     "train.noise_scale to true"});
        if (K * ranks < 2)
            c.issues.push_back({"train.gradient_accumulation_steps",
                                "train.batch_policy adaptive measures the critical batch from two micro-batches or "
                                "more a window (gradient_accumulation_steps x world_size = " + num(K * ranks) +
                                "); raise gradient_accumulation_steps to 2"});
    } else if (t.batch_adapt_dwell_tokens > 0 || t.batch_adapt_max_accumulation > 0) {
        c.issues.push_back({"train.batch_policy", "train.batch_adapt_dwell_tokens / batch_adapt_max_accumulation are "
                                                  "set but train.batch_policy is \"" + t.batch_policy +
                                                  "\": set it to \"adaptive\" or clear them"});
    }
    if (t.tokens > 0 && t.samples > 0)
        c.issues.push_back({"train.tokens", "train.tokens and train.samples both give the run's length: set one of "
                                            "them to 0"});
    if (t.tokens > 0 && t.seq_len >= 1 && unit >= 1 && t.tokens % (unit * t.seq_len) != 0) {
        const int64_t each = unit * t.seq_len;
        c.issues.push_back({"train.tokens", "train.tokens (" + num(t.tokens) + ") must be a whole number of "
                                            "micro-batches on every rank, a multiple of micro_batch_size x world_size x "
                                            "seq_len = " + num(each) + "; use " + num(std::max(each, t.tokens / each * each)) +
                                            " or " + num((t.tokens / each + 1) * each)});
    }
    const int64_t W = config.runtime.world_size;
    if (t.samples > 0 && t.micro_batch_size >= 1 && W >= 1) {
        if (t.samples % unit != 0)
            c.issues.push_back({"train.samples", "train.samples (" + num(t.samples) + ") must be a whole number of "
                                                 "micro-batches on every rank, a multiple of micro_batch_size x world_size = " +
                                                 num(unit) + "; use " + num(t.samples / unit * unit) + " or " +
                                                 num((t.samples / unit + 1) * unit)});
        else if (t.samples < unit * t.gradient_accumulation_steps && isChoice(t.incomplete_window, IncompleteWindow::Drop))
            c.issues.push_back({"train.samples", "train.samples (" + num(t.samples) + ") fills no complete window of " +
                                                 num(unit * t.gradient_accumulation_steps) +
                                                 " sequences and train.incomplete_window is \"drop\": nothing would "
                                                 "train; raise train.samples or set train.incomplete_window to \"scale\""});
    }

    if (t.global_batch_size && t.micro_batch_size >= 1 && t.gradient_accumulation_steps >= 1 && W >= 1) {
        const int64_t B = *t.global_batch_size;
        const int64_t product = t.micro_batch_size * t.gradient_accumulation_steps * W;
        if (B != product) {
            std::string fix;
            if (B >= 1 && B % W == 0 && B / W <= (int64_t(1) << 40)) {
                std::vector<int64_t> ms = divisorsOf(B / W), ks;
                for (auto mm : ms) ks.push_back(B / W / mm);
                fix = "global_batch_size " + num(B) + " with world_size " + num(W) + " allows micro_batch_size in {" +
                      joinInts(ms) + "} with gradient_accumulation_steps " + joinInts(ks) + " respectively";
            } else if (B < 1 || B % W != 0) {
                fix = "global_batch_size must be a multiple of runtime.world_size (" + num(W) + ")";
            } else {
                fix = "set global_batch_size to " + num(product) + ", or clear it";
            }
            c.issues.push_back({"train.global_batch_size",
                                "train.micro_batch_size (" + num(t.micro_batch_size) + ") * train.gradient_accumulation_steps (" +
                                    num(t.gradient_accumulation_steps) + ") * runtime.world_size (" + num(W) + ") = " +
                                    num(product) + " != train.global_batch_size (" + num(B) + "); " + fix});
        }
    }
}

// data.sources: document sources only, each with a path, a positive weight and a name fit for a
// metric key, the names distinct; data.path and data.val_path are the single source's.
void checkMixture(Checker& c, const DataConfig& d) {
    if (d.sources.empty()) return;
    if (!readsDocuments(d))
        c.fail("data.sources", std::to_string(d.sources.size()) + " sources",
               "mix document sources only; data.source is \"" + d.source + "\"",
               "set data.source to text, jsonl, parquet or hf_dataset (the sources' default)");
    if (!d.path.empty())
        c.fail("data.path", "\"" + d.path + "\"", "is not read when data.sources is set",
               "clear data.path, or add it to data.sources");
    if (!d.val_path.empty())
        c.fail("data.val_path", "\"" + d.val_path + "\"", "is not read with data.sources: each source holds out its "
                                                        "own data.val_fraction",
               "clear data.val_path");
    std::vector<std::string> names;
    for (size_t i = 0; i < d.sources.size(); ++i) {
        const DataMixtureSource& s = d.sources[i];
        const std::string at = "data.sources[" + std::to_string(i) + "]";
        if (s.path.empty()) c.fail(at + ".path", "\"\"", "is required", "set the source's path to a file or folder");
        if (!(s.weight > 0) || !std::isfinite(s.weight))
            c.fail(at + ".weight", num(s.weight), "must be a positive number", "give the source's share, e.g. 0.7");
        if (!s.source.empty()) {
            DataConfig one;
            one.source = s.source;
            if (!readsDocuments(one))
                c.fail(at + ".source", "\"" + s.source + "\"", "is not a document source",
                       "use text, jsonl, parquet or hf_dataset");
        }
        const std::string name = mixtureSourceName(s);
        const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
        });
        if (!plain)
            c.fail(at + ".name", "\"" + name + "\"", "names the source in metric keys: letters, digits, '_', '-' and '.' only",
                   "set the source's name, e.g. \"web\"");
        else if (std::find(names.begin(), names.end(), name) != names.end())
            c.fail(at + ".name", "\"" + name + "\"", "is the name of another source too", "give each source its own name");
        names.push_back(name);
    }
}

void checkData(Checker& c, const RunConfig& config) {
    const DataConfig& d = config.data;
    c.oneOf<DataSource>("data.source", d.source);
    if ((readsDocuments(d) || isChoice(d.source, DataSource::Tokens)) && d.path.empty() && d.sources.empty())
        c.fail("data.path", "\"\"", "is required for source \"" + d.source + "\"", "set data.path to a file or folder");
    checkMixture(c, d);
    const bool records = isChoice(d.source, DataSource::Jsonl) || isChoice(d.source, DataSource::Parquet) ||
                         isChoice(d.source, DataSource::HfDataset);
    if (records) {
        if (readsPairs(d)) {
            if (d.prompt_field.empty())
                c.fail("data.prompt_field", "\"\"", "is required with data.completion_field (\"" + d.completion_field + "\")",
                       "name the prompt's field, e.g. \"prompt\", or clear data.completion_field");
            if (d.completion_field.empty())
                c.fail("data.completion_field", "\"\"", "is required with data.prompt_field (\"" + d.prompt_field + "\")",
                       "name the completion's field, e.g. \"completion\", or clear data.prompt_field");
            if (!d.prompt_field.empty() && d.prompt_field == d.completion_field)
                c.fail("data.completion_field", "\"" + d.completion_field + "\"", "is the same field as data.prompt_field",
                       "name two different fields");
        } else if (d.text_field.empty()) {
            c.fail("data.text_field", "\"\"", "names no field", "set data.text_field (default \"text\"), or set "
                                                               "data.prompt_field and data.completion_field for pairs");
        }
    } else if (readsPairs(d)) {
        const std::string field = d.prompt_field.empty() ? "data.completion_field" : "data.prompt_field";
        c.fail(field, "\"" + (d.prompt_field.empty() ? d.completion_field : d.prompt_field) + "\"",
               "is read by data.source \"jsonl\", \"parquet\" and \"hf_dataset\" only",
               "set data.source to jsonl, parquet or hf_dataset, or clear " + field);
    }
    c.within("data.vocab_size", d.vocab_size, 0, kMaxVocab, "token ids of 32-bit files");
    if (!(d.val_fraction >= 0 && d.val_fraction < 1))
        c.fail("data.val_fraction", num(d.val_fraction), "must be in [0, 1)", "use e.g. 0.05");
    if (isChoice(d.source, DataSource::Markov)) {
        int64_t vocab = d.vocab_size > 0 ? d.vocab_size : config.model.vocab_size;
        if (vocab > config.model.vocab_size)
            c.fail("data.vocab_size", num(vocab), "must be <= model.vocab_size (" + num(config.model.vocab_size) + ")",
                   "lower data.vocab_size or raise model.vocab_size");
        if (d.vocab_size == 0 && vocab > 4096)
            c.fail("data.vocab_size", num(vocab), "a Markov language over more than 4096 tokens is too large to tabulate",
                   "set data.vocab_size (e.g. 256) for the synthetic source");
        c.atLeast("data.order", d.order, 1);
        if (d.order > 3) c.fail("data.order", num(d.order), "must be <= 3", "use order 1, 2 or 3");
        // The source tabulates vocab^(order + 1) probabilities: counted in 128 bits, bounded at
        // 2^27 (a GiB of doubles).
        if (d.order >= 1 && d.order <= 3 && (d.vocab_size > 0 || vocab <= 4096)) {  // else said above
            __int128 entries = 1;
            for (int64_t i = 0; i <= d.order; ++i) entries *= vocab;
            if (entries > (__int128(1) << 27))
                c.fail(d.vocab_size > 0 ? "data.vocab_size" : "data.order", num(d.vocab_size > 0 ? vocab : d.order),
                       "a Markov language of order " + num(d.order) + " over " + num(vocab) +
                           " tokens has vocab^(order + 1) = " + num(double(entries)) +
                           " probabilities to tabulate, more than 2^27",
                       "lower data.vocab_size or data.order");
        }
        c.positive("data.concentration", d.concentration);
    }
    if (!d.tokenizer.empty() && !readsDocuments(d))
        c.fail("data.tokenizer", "\"" + d.tokenizer + "\"", "is read by data.source \"text\", \"jsonl\", \"parquet\" and \"hf_dataset\" only",
               "set data.source to text, jsonl, parquet or hf_dataset, or clear data.tokenizer");
    if (readsDocuments(d) && d.tokenizer.empty() && config.model.vocab_size < 256)
        c.fail("model.vocab_size", num(config.model.vocab_size),
               "must be >= 256 for data.source \"" + d.source + "\" without data.tokenizer (byte ids 0..255)",
               "set model.vocab_size to 256 or more");
    c.oneOf<RowLayout>("data.layout", d.layout);
    c.oneOf<TokenWidth>("data.dtype", d.dtype);
}

void checkTarget(Checker& c, const TargetConfig& t) {
    c.oneOf<TargetKind>("target.kind", t.kind);
    c.within("target.devices", t.devices, 0, int64_t(1) << 20, "2^20");
    c.within("target.devices_per_node", t.devices_per_node, 0, 1024, "1024");
    const std::pair<const char*, double> figures[] = {
        {"target.device_memory_gib", t.device_memory_gib}, {"target.host_memory_gib", t.host_memory_gib},
        {"target.nvme_gib", t.nvme_gib},                   {"target.compute_tflops", t.compute_tflops},
        {"target.pcie_gbps", t.pcie_gbps},                 {"target.interconnect_gbps", t.interconnect_gbps},
        {"target.network_gbps", t.network_gbps},           {"target.host_memory_gbps", t.host_memory_gbps},
        {"target.nvme_read_gbps", t.nvme_read_gbps},       {"target.nvme_write_gbps", t.nvme_write_gbps},
        {"target.cpu_adamw_gparams", t.cpu_adamw_gparams}};
    for (const auto& [path, value] : figures) {
        c.nonNegative(path, value);
        // (a PiB, a million TFLOP/s, a PB/s: beyond any machine, and products of them stay finite)
        if (value > 1e6) c.fail(path, num(value), "is beyond any machine (at most 1e6)", "use the figure of one device or node");
    }
    if (!(t.mfu > 0 && t.mfu <= 1))
        c.fail("target.mfu", num(t.mfu), "must be in (0, 1]", "e.g. 0.4 (40 % of the peak reached)");
    if (isChoice(t.kind, TargetKind::Custom) && !(t.device_memory_gib > 0))
        c.issues.push_back({"target.device_memory_gib", "target.kind custom needs target.device_memory_gib (the memory "
                                                        "of one device in GiB), e.g. --set target.device_memory_gib=80"});
}

// runtime.tensorboard_dir is made when the run starts (store/run_recorder.cpp); refused here is
// a path that can never become a folder: it, or the nearest part of it that exists, is a file.
void checkTensorBoardDir(Checker& c, const std::string& dir) {
    namespace fs = std::filesystem;
    for (fs::path p = dir; !dir.empty();) {
        std::error_code error;  // unreadable (permissions): left to the run's own attempt
        const fs::file_type type = fs::status(p, error).type();
        if (type == fs::file_type::not_found && p.has_parent_path() && p.parent_path() != p) {
            p = p.parent_path();
            continue;
        }
        if (type != fs::file_type::not_found && type != fs::file_type::none && type != fs::file_type::directory)
            c.fail("runtime.tensorboard_dir", "\"" + dir + "\"",
                   (p == fs::path(dir) ? std::string("is a file") : p.string() + " is a file") + ", not a folder",
                   "name a folder (it is created if missing), or clear the field");
        return;
    }
}

void checkRuntime(Checker& c, const RuntimeConfig& r) {
    const std::string& dev = r.device;
    bool known = dev == "auto" || dev == "cpu" || dev == "cuda" || dev.rfind("cuda:", 0) == 0;
    if (!known) c.fail("runtime.device", "\"" + dev + "\"", "must be auto, cpu, cuda or cuda:i,j,...", "e.g. cpu or cuda:0");
    c.oneOf<ComputeDtype>("runtime.dtype", r.dtype);
    c.oneOf<OptimizerDtype>("runtime.optimizer_dtype", r.optimizer_dtype);
    c.oneOf<GradientSumDtype>("runtime.gradient_sum_dtype", r.gradient_sum_dtype);
    c.positive("runtime.comm_timeout_s", r.comm_timeout_s);
    c.positive("runtime.store_wait_s", r.store_wait_s);
    c.oneOf<Recomputation>("runtime.activation_checkpointing", r.activation_checkpointing);
    c.oneOf<Offload>("runtime.offload", r.offload);
    c.oneOf<WindowSchedule>("runtime.window_schedule", r.window_schedule);
    if (isChoice(r.window_schedule, WindowSchedule::Unit) && !isChoice(r.activation_checkpointing, Recomputation::Full))
        c.issues.push_back({"runtime.window_schedule",
                            "runtime.window_schedule unit keeps only each unit's input per micro-batch and runs the "
                            "block again in its backward, which is runtime.activation_checkpointing full (now \"" +
                                r.activation_checkpointing + "\"): set activation_checkpointing to full, or "
                                                             "window_schedule to micro_batch"});
    checkTensorBoardDir(c, r.tensorboard_dir);
    if (isChoice(r.offload, Offload::All) && r.zero_stage != 3)
        c.issues.push_back({"runtime.offload", "runtime.offload all keeps each rank's shard of the weights off the "
                                               "device, and only runtime.zero_stage 3 shards the weights: set "
                                               "runtime.zero_stage to 3 or runtime.offload to optimizer"});
    if (!isChoice(r.offload, Offload::None)) {
        if (r.zero_stage < 1)
            c.issues.push_back({"runtime.offload", "runtime.offload optimizer moves each rank's shard of the AdamW state "
                                                   "off the device, and runtime.zero_stage 0 has no shards: set "
                                                   "runtime.zero_stage to 1 or more (at world_size 1, stage 1 is the same "
                                                   "arithmetic as 0)"});
    } else if (!r.offload_dir.empty() && isChoice(r.offload, Offload::None)) {
        c.issues.push_back({"runtime.offload_dir", "runtime.offload_dir is set but runtime.offload is \"" + r.offload +
                                                       "\": set runtime.offload to \"optimizer\" or \"all\", or clear offload_dir"});
    }
    if (r.zero_stage < 0 || r.zero_stage > 3)
        c.fail("runtime.zero_stage", num(r.zero_stage),
               "must be 0 (nothing sharded), 1 (AdamW moments sharded), 2 (gradients too) or 3 (weights too)",
               "use 3 to shard the whole training state");
}

}  // namespace

std::vector<ConfigIssue> validateRunConfig(const RunConfig& config) {
    Checker checker;
    // No rule below multiplies a count that is out of its range.
    checkRanges(checker, config);
    if (!checker.issues.empty()) return checker.issues;
    // Nor one whose products are too large for 64 bits.
    checkScale(checker, config);
    if (!checker.issues.empty()) return checker.issues;
    checkModel(checker, config.model);
    checkTrain(checker, config);
    checkData(checker, config);
    checkRuntime(checker, config.runtime);
    checkTarget(checker, config.target);
    // Stage 2 reduces every micro-batch already; stage 1 reduce-scatters once per window, and a
    // sharded state agrees its stops at the window's end, which the sync-each mode's all-reduces
    // in every micro-batch would pair with.
    const int64_t EP = config.runtime.expert_parallel, W = config.runtime.world_size;
    if (EP > 1) {
        const int64_t E = config.model.n_routed_experts;
        const bool has_moe = E > 0 && config.model.n_dense_layers < config.model.n_layers;
        if (!has_moe)
            checker.fail("runtime.expert_parallel", num(EP), "needs MoE layers to divide (the model has none)",
                         "set it to 1");
        else if (W % EP != 0 || E % EP != 0)
            checker.fail("runtime.expert_parallel", num(EP),
                         "must divide runtime.world_size (" + num(W) + ") and model.n_routed_experts (" + num(E) + ")",
                         "use a common divisor of both");
    }
    if (config.runtime.zero_stage >= 1 && config.train.sync_each_micro_batch)
        checker.fail("train.sync_each_micro_batch", "true",
                     "is a stage 0 debugging mode (an all-reduce per micro-batch); runtime.zero_stage " +
                         num(config.runtime.zero_stage) + " reduces its own way",
                     "set it to false, or use zero_stage 0");
    if (isChoice(config.runtime.window_schedule, WindowSchedule::Unit) && config.train.sync_each_micro_batch)
        checker.fail("train.sync_each_micro_batch", "true",
                     "all-reduces each micro-batch's whole gradients, and runtime.window_schedule unit has no point "
                     "where one micro-batch's are whole",
                     "set it to false, or window_schedule to micro_batch");
    return checker.issues;
}

bool isDataIssue(const ConfigIssue& issue) { return issue.path.rfind("data.", 0) == 0; }

void requireValidRunConfig(const RunConfig& config) {
    auto issues = validateRunConfig(config);
    if (!issues.empty()) throw ConfigError(issues.front().path, issues.front().message);
}

}  // namespace trainbench
