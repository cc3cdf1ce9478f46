// The built-in tiny preset: what the workbench opens when configs/tiny.json is not at hand.
#include "default_config.h"

namespace trainbench::gui {

RunConfig builtinTinyConfig() {
    RunConfig config;

    ModelConfig& model = config.model;
    model.vocab_size = 64;
    model.dim = 64;
    model.inter_dim = 128;
    model.moe_inter_dim = 32;
    model.n_layers = 2;
    model.n_dense_layers = 1;
    model.n_heads = 4;
    model.n_routed_experts = 8;
    model.n_shared_experts = 1;
    model.n_activated_experts = 2;
    model.n_expert_groups = 2;
    model.n_limited_groups = 1;
    model.score_func = "sigmoid";
    model.route_scale = 1.0;
    model.q_lora_rank = 32;
    model.kv_lora_rank = 32;
    model.qk_nope_head_dim = 16;
    model.qk_rope_head_dim = 8;
    model.v_head_dim = 16;
    model.max_seq_len = 256;
    model.gate_bias = true;
    model.init_std = 0.02;

    TrainConfig& train = config.train;
    train.micro_batch_size = 8;
    train.gradient_accumulation_steps = 2;
    train.seq_len = 64;
    train.steps = 150;
    train.lr = 3e-3;
    train.min_lr = 3e-4;
    train.warmup_steps = 10;
    train.schedule = "cosine";
    train.weight_decay = 0.1;
    train.grad_clip = 1.0;
    train.seed = 0;

    DataConfig& data = config.data;
    data.source = "markov";
    data.order = 1;
    data.concentration = 0.1;
    data.seed = 1234;

    RuntimeConfig& runtime = config.runtime;
    runtime.device = "cpu";
    runtime.world_size = 1;
    runtime.dtype = "fp32";
    return config;
}

}  // namespace trainbench::gui
