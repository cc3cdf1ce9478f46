// The run config of the GUI suites that train: a DeepSeek model small enough that a step takes
// milliseconds on a CPU (m 2 x K 1 x W 1, 16 tokens per sequence).
#pragma once

#include <cstdint>

#include "trainbench/run_config.h"

namespace trainbench::gui {

inline RunConfig tinyGuiConfig(int64_t steps = 30) {
    RunConfig config;
    ModelConfig& model = config.model;
    model.vocab_size = 32;
    model.dim = 32;
    model.inter_dim = 64;
    model.moe_inter_dim = 16;
    model.n_layers = 2;
    model.n_dense_layers = 1;
    model.n_heads = 2;
    model.n_routed_experts = 4;
    model.n_shared_experts = 1;
    model.n_activated_experts = 2;
    model.q_lora_rank = 0;
    model.kv_lora_rank = 16;
    model.qk_nope_head_dim = 8;
    model.qk_rope_head_dim = 8;
    model.v_head_dim = 8;
    model.max_seq_len = 64;
    TrainConfig& train = config.train;
    train.micro_batch_size = 2;
    train.gradient_accumulation_steps = 1;
    train.seq_len = 16;
    train.steps = steps;
    train.warmup_steps = 2;
    config.data.source = "markov";
    config.runtime.device = "cpu";
    return config;
}

}  // namespace trainbench::gui
