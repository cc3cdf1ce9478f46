// Cross-field validation of a run config: every rule, with the field, the value and a fix.
#include <cmath>
#include <sstream>

#include "trainbench/config_io.h"

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
    void positive(const std::string& path, double value) {
        if (!(value > 0) || !std::isfinite(value)) fail(path, num(value), "must be a finite number > 0", "use a positive value");
    }
    void nonNegative(const std::string& path, double value) {
        if (!(value >= 0) || !std::isfinite(value)) fail(path, num(value), "must be a finite number >= 0", "use 0 or a positive value");
    }
    void oneOf(const std::string& path, const std::string& value, std::initializer_list<const char*> options) {
        std::string list;
        for (const char* o : options) {
            if (value == o) return;
            list += list.empty() ? o : std::string(", ") + o;
        }
        fail(path, "\"" + value + "\"", "must be one of " + list, "pick one of those");
    }
};

// Divisors of n, for the batch-identity messages.
std::vector<int64_t> divisors(int64_t n) {
    std::vector<int64_t> out;
    for (int64_t d = 1; d <= n; ++d)
        if (n % d == 0) out.push_back(d);
    return out;
}

std::string joinInts(const std::vector<int64_t>& values) {
    std::string s;
    for (auto v : values) s += (s.empty() ? "" : ", ") + std::to_string(v);
    return s;
}

void checkModel(Checker& c, const ModelConfig& m) {
    c.atLeast("model.vocab_size", m.vocab_size, 2);
    c.atLeast("model.dim", m.dim, 1);
    c.atLeast("model.inter_dim", m.inter_dim, 1);
    c.atLeast("model.moe_inter_dim", m.moe_inter_dim, 1);
    c.atLeast("model.n_layers", m.n_layers, 1);
    c.atLeast("model.n_dense_layers", m.n_dense_layers, 0);
    if (m.n_dense_layers > m.n_layers)
        c.fail("model.n_dense_layers", num(m.n_dense_layers), "must be <= model.n_layers (" + num(m.n_layers) + ")",
               "lower n_dense_layers or raise n_layers");
    c.atLeast("model.n_heads", m.n_heads, 1);
    c.atLeast("model.n_routed_experts", m.n_routed_experts, 1);
    c.atLeast("model.n_shared_experts", m.n_shared_experts, 0);
    c.atLeast("model.n_activated_experts", m.n_activated_experts, 1);
    if (m.n_activated_experts > m.n_routed_experts)
        c.fail("model.n_activated_experts", num(m.n_activated_experts),
               "must be <= model.n_routed_experts (" + num(m.n_routed_experts) + ")",
               "choose at most " + num(m.n_routed_experts) + " experts per token");
    c.atLeast("model.n_expert_groups", m.n_expert_groups, 1);
    c.atLeast("model.n_limited_groups", m.n_limited_groups, 1);
    if (m.n_expert_groups >= 1 && m.n_routed_experts >= 1 && m.n_routed_experts % m.n_expert_groups != 0)
        c.fail("model.n_expert_groups", num(m.n_expert_groups),
               "must divide model.n_routed_experts (" + num(m.n_routed_experts) + ")",
               "use a divisor of " + num(m.n_routed_experts) + ": " + joinInts(divisors(m.n_routed_experts)));
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
    c.oneOf("model.score_func", m.score_func, {"softmax", "sigmoid"});
    c.positive("model.route_scale", m.route_scale);
    c.atLeast("model.q_lora_rank", m.q_lora_rank, 0);
    c.atLeast("model.kv_lora_rank", m.kv_lora_rank, 1);
    c.atLeast("model.qk_nope_head_dim", m.qk_nope_head_dim, 0);
    c.atLeast("model.qk_rope_head_dim", m.qk_rope_head_dim, 2);
    if (m.qk_rope_head_dim % 2 != 0)
        c.fail("model.qk_rope_head_dim", num(m.qk_rope_head_dim), "must be even (rotary pairs)",
               "use " + num(m.qk_rope_head_dim + 1));
    c.atLeast("model.v_head_dim", m.v_head_dim, 1);
    c.atLeast("model.max_seq_len", m.max_seq_len, 1);
    c.atLeast("model.original_seq_len", m.original_seq_len, 1);
    c.atLeast("model.max_batch_size", m.max_batch_size, 1);
    c.positive("model.rope_theta", m.rope_theta);
    c.positive("model.rope_factor", m.rope_factor);
    c.positive("model.beta_fast", m.beta_fast);
    c.positive("model.beta_slow", m.beta_slow);
    c.positive("model.mscale", m.mscale);
    c.oneOf("model.dtype", m.dtype, {"bf16", "fp8"});
    c.nonNegative("model.bias_update_speed", m.bias_update_speed);
    c.nonNegative("model.seq_aux_loss_alpha", m.seq_aux_loss_alpha);
    c.positive("model.init_std", m.init_std);
}

void checkTrain(Checker& c, const RunConfig& config) {
    const TrainConfig& t = config.train;
    c.atLeast("train.micro_batch_size", t.micro_batch_size, 1);
    c.atLeast("train.gradient_accumulation_steps", t.gradient_accumulation_steps, 1);
    c.atLeast("train.seq_len", t.seq_len, 1);
    if (t.seq_len > config.model.max_seq_len)
        c.fail("train.seq_len", num(t.seq_len), "must be <= model.max_seq_len (" + num(config.model.max_seq_len) + ")",
               "shorten seq_len or raise model.max_seq_len");
    c.atLeast("train.steps", t.steps, 1);
    c.nonNegative("train.lr", t.lr);
    c.nonNegative("train.min_lr", t.min_lr);
    if (t.min_lr > t.lr)
        c.fail("train.min_lr", num(t.min_lr), "must be <= train.lr (" + num(t.lr) + ")", "lower min_lr");
    c.atLeast("train.warmup_steps", t.warmup_steps, 0);
    c.oneOf("train.schedule", t.schedule, {"constant", "cosine", "linear"});
    c.nonNegative("train.weight_decay", t.weight_decay);
    if (!(t.beta1 >= 0 && t.beta1 < 1)) c.fail("train.beta1", num(t.beta1), "must be in [0, 1)", "use e.g. 0.9");
    if (!(t.beta2 >= 0 && t.beta2 < 1)) c.fail("train.beta2", num(t.beta2), "must be in [0, 1)", "use e.g. 0.95");
    c.nonNegative("train.grad_clip", t.grad_clip);
    c.atLeast("train.seed", t.seed, 0);
    c.oneOf("train.loss_normalization", t.loss_normalization, {"tokens"});
    c.oneOf("train.incomplete_window", t.incomplete_window, {"scale", "drop"});
    c.oneOf("train.batch_policy", t.batch_policy, {"fixed", "ramp", "adaptive"});
    c.oneOf("train.lr_batch_rule", t.lr_batch_rule, {"sqrt", "linear", "none"});
    const int64_t ranks = config.runtime.world_size;
    const int64_t unit = t.micro_batch_size * ranks, global = t.micro_batch_size * t.gradient_accumulation_steps * ranks;
    if (t.batch_policy == "ramp") {
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
    if (t.batch_policy == "adaptive") {
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
    c.atLeast("train.tokens", t.tokens, 0);
    c.atLeast("train.warmup_tokens", t.warmup_tokens, 0);
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
    c.atLeast("train.eval_every", t.eval_every, 0);
    c.atLeast("train.eval_windows", t.eval_windows, 0);
    c.atLeast("train.checkpoint_every", t.checkpoint_every, 0);
    c.atLeast("train.log_every", t.log_every, 1);
    c.atLeast("train.keep_checkpoints", t.keep_checkpoints, 1);
    c.atLeast("train.max_bad_steps", t.max_bad_steps, 1);
    c.atLeast("train.samples", t.samples, 0);
    const int64_t W = config.runtime.world_size;
    if (t.samples > 0 && t.micro_batch_size >= 1 && W >= 1) {
        if (t.samples % unit != 0)
            c.issues.push_back({"train.samples", "train.samples (" + num(t.samples) + ") must be a whole number of "
                                                 "micro-batches on every rank, a multiple of micro_batch_size x world_size = " +
                                                 num(unit) + "; use " + num(t.samples / unit * unit) + " or " +
                                                 num((t.samples / unit + 1) * unit)});
        else if (t.samples < unit * t.gradient_accumulation_steps && t.incomplete_window == "drop")
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
            if (B >= 1 && B % W == 0) {
                std::vector<int64_t> ms = divisors(B / W), ks;
                for (auto mm : ms) ks.push_back(B / W / mm);
                fix = "global_batch_size " + num(B) + " with world_size " + num(W) + " allows micro_batch_size in {" +
                      joinInts(ms) + "} with gradient_accumulation_steps " + joinInts(ks) + " respectively";
            } else {
                fix = "global_batch_size must be a multiple of runtime.world_size (" + num(W) + ")";
            }
            c.issues.push_back({"train.global_batch_size",
                                "train.micro_batch_size (" + num(t.micro_batch_size) + ") * train.gradient_accumulation_steps (" +
                                    num(t.gradient_accumulation_steps) + ") * runtime.world_size (" + num(W) + ") = " +
                                    num(product) + " != train.global_batch_size (" + num(B) + "); " + fix});
        }
    }
}

void checkData(Checker& c, const RunConfig& config) {
    const DataConfig& d = config.data;
    c.oneOf("data.source", d.source, {"markov", "text", "tokens"});
    if ((d.source == "text" || d.source == "tokens") && d.path.empty())
        c.fail("data.path", "\"\"", "is required for source \"" + d.source + "\"", "set data.path to a file or folder");
    if (!(d.val_fraction >= 0 && d.val_fraction < 1))
        c.fail("data.val_fraction", num(d.val_fraction), "must be in [0, 1)", "use e.g. 0.05");
    c.atLeast("data.vocab_size", d.vocab_size, 0);
    if (d.source == "markov") {
        int64_t vocab = d.vocab_size > 0 ? d.vocab_size : config.model.vocab_size;
        if (vocab > config.model.vocab_size)
            c.fail("data.vocab_size", num(vocab), "must be <= model.vocab_size (" + num(config.model.vocab_size) + ")",
                   "lower data.vocab_size or raise model.vocab_size");
        if (d.vocab_size == 0 && vocab > 4096)
            c.fail("data.vocab_size", num(vocab), "a Markov language over more than 4096 tokens is too large to tabulate",
                   "set data.vocab_size (e.g. 256) for the synthetic source");
        c.atLeast("data.order", d.order, 1);
        if (d.order > 3) c.fail("data.order", num(d.order), "must be <= 3", "use order 1, 2 or 3");
        c.positive("data.concentration", d.concentration);
    }
    if (!d.tokenizer.empty() && d.source != "text")
        c.fail("data.tokenizer", "\"" + d.tokenizer + "\"", "is read by data.source \"text\" only",
               "set data.source to text, or clear data.tokenizer");
    if (d.source == "text" && d.tokenizer.empty() && config.model.vocab_size < 256)
        c.fail("model.vocab_size", num(config.model.vocab_size), "must be >= 256 for data.source \"text\" (byte ids 0..255)",
               "set model.vocab_size to 256 or more");
    c.oneOf("data.layout", d.layout, {"packed", "padded"});
    c.oneOf("data.dtype", d.dtype, {"uint16", "uint32"});
}

void checkRuntime(Checker& c, const RuntimeConfig& r) {
    const std::string& dev = r.device;
    bool known = dev == "auto" || dev == "cpu" || dev == "cuda" || dev.rfind("cuda:", 0) == 0;
    if (!known) c.fail("runtime.device", "\"" + dev + "\"", "must be auto, cpu, cuda or cuda:i,j,...", "e.g. cpu or cuda:0");
    c.atLeast("runtime.world_size", r.world_size, 1);
    c.oneOf("runtime.dtype", r.dtype, {"fp32", "bf16", "auto"});
    c.positive("runtime.comm_timeout_s", r.comm_timeout_s);
    c.atLeast("runtime.threads", r.threads, 0);
    c.atLeast("runtime.memory_limit_mb", r.memory_limit_mb, 0);
    c.positive("runtime.store_wait_s", r.store_wait_s);
    c.oneOf("runtime.activation_checkpointing", r.activation_checkpointing, {"none", "feedforward", "full"});
    if (r.zero_stage < 0 || r.zero_stage > 3)
        c.fail("runtime.zero_stage", num(r.zero_stage),
               "must be 0 (nothing sharded), 1 (AdamW moments sharded), 2 (gradients too) or 3 (weights too)",
               "use 3 to shard the whole training state");
}

}  // namespace

std::vector<ConfigIssue> validateRunConfig(const RunConfig& config) {
    Checker checker;
    checkModel(checker, config.model);
    checkTrain(checker, config);
    checkData(checker, config);
    checkRuntime(checker, config.runtime);
    // Stage 2 reduces every micro-batch already; stage 1 reduce-scatters once per window, and a
    // sharded state agrees its stops at the window's end, which the sync-each mode's all-reduces
    // in every micro-batch would pair with.
    const int64_t EP = config.runtime.expert_parallel, W = config.runtime.world_size;
    if (EP < 1) {
        checker.fail("runtime.expert_parallel", num(EP), "must be at least 1", "use 1 (every rank holds every expert)");
    } else if (EP > 1) {
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
    return checker.issues;
}

bool isDataIssue(const ConfigIssue& issue) { return issue.path.rfind("data.", 0) == 0; }

void requireValidRunConfig(const RunConfig& config) {
    auto issues = validateRunConfig(config);
    if (!issues.empty()) throw ConfigError(issues.front().path, issues.front().message);
}

}  // namespace trainbench
