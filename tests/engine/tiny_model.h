// The tiny DeepSeek-style model of the engine suites: low-rank queries, MoE with a shared expert,
// sigmoid router with balancing bias; small enough for milliseconds per step on a CPU.
#pragma once

#include "trainbench/run_config.h"

namespace trainbench {

inline ModelConfig tinyTestModel(int64_t vocab_size, int64_t dim) {
    ModelConfig c;
    c.vocab_size = vocab_size;
    c.dim = dim;
    c.inter_dim = dim * 3 / 2;
    c.moe_inter_dim = dim / 2;
    c.n_layers = 2;
    c.n_dense_layers = 1;
    c.n_heads = 2;
    c.n_routed_experts = 4;
    c.n_shared_experts = 1;
    c.n_activated_experts = 2;
    c.q_lora_rank = dim / 2;
    c.kv_lora_rank = dim / 2;
    c.qk_nope_head_dim = dim / 4;
    c.qk_rope_head_dim = dim / 4;
    c.v_head_dim = dim / 4 + 2;  // unlike qk, so a mix-up of the two widths cannot pass
    c.max_seq_len = 64;
    c.init_std = 0.02;
    c.score_func = "sigmoid";
    c.gate_bias = true;
    return c;
}

// A short run of that model: m 2 x K 2 sequences of 16 tokens, one intra-op thread per rank.
inline RunConfig tinyRun(int64_t steps) {
    RunConfig c;
    c.model = tinyTestModel(32, 32);
    c.train.micro_batch_size = 2;
    c.train.gradient_accumulation_steps = 2;
    c.train.seq_len = 16;
    c.train.steps = steps;
    c.runtime.threads = 1;
    return c;
}

}  // namespace trainbench
