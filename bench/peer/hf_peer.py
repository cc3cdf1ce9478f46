"""The peer: the same DeepSeek-V3 model in PyTorch through Hugging Face transformers
(DeepseekV3ForCausalLM), loaded with Trainbench's weights, trained by a plain PyTorch loop.

  hf_peer.py eval  CONFIG.json WEIGHTS VAL.bin          -> {"loss": ..., "tokens": ...}
  hf_peer.py train CONFIG.json WEIGHTS TRAIN.bin --steps N --warmup W [--compile] [--bf16]

WEIGHTS is a Hugging Face directory (`trainbench-cli export-hf`; every transformers release
loads it with from_pretrained, whatever its own expert layout) or, for transformers 4 only,
Trainbench's safetensors (mapped by name here). --compile trains torch.compile(model).

CONFIG.json is the complete config `trainbench-cli config` prints (every default filled in),
so both sides build the same model. Token files hold little-endian uint16 ids. Train reports
tokens/s over the steps after the warm-up ones, with the same m, K, AdamW and clipping.
Bench-only: transformers is never a dependency of the product (bench/peer/setup-peer.sh).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from transformers import DeepseekV3Config, DeepseekV3ForCausalLM


def hf_config(model):
    if model["score_func"] != "sigmoid":
        sys.exit("the peer supports the sigmoid router only (DeepseekV3TopkRouter); "
                 f"this config has score_func {model['score_func']}")
    rope_scaling = None
    if model["max_seq_len"] > model["original_seq_len"]:
        # The reference scales the softmax by mscale^2 and leaves cos/sin alone: HF does the
        # same when mscale == mscale_all_dim.
        rope_scaling = {"rope_type": "yarn", "factor": model["rope_factor"],
                        "original_max_position_embeddings": model["original_seq_len"],
                        "beta_fast": model["beta_fast"], "beta_slow": model["beta_slow"],
                        "mscale": model["mscale"], "mscale_all_dim": model["mscale"]}
    return DeepseekV3Config(
        vocab_size=model["vocab_size"], hidden_size=model["dim"], intermediate_size=model["inter_dim"],
        moe_intermediate_size=model["moe_inter_dim"], num_hidden_layers=model["n_layers"],
        num_attention_heads=model["n_heads"], num_key_value_heads=model["n_heads"],
        n_shared_experts=model["n_shared_experts"], n_routed_experts=model["n_routed_experts"],
        routed_scaling_factor=model["route_scale"], kv_lora_rank=model["kv_lora_rank"],
        q_lora_rank=model["q_lora_rank"] or None, qk_rope_head_dim=model["qk_rope_head_dim"],
        v_head_dim=model["v_head_dim"], qk_nope_head_dim=model["qk_nope_head_dim"],
        n_group=model["n_expert_groups"], topk_group=model["n_limited_groups"],
        num_experts_per_tok=model["n_activated_experts"], first_k_dense_replace=model["n_dense_layers"],
        norm_topk_prob=True, max_position_embeddings=model["max_seq_len"], rms_norm_eps=1e-6,
        rope_theta=model["rope_theta"], rope_scaling=rope_scaling, tie_word_embeddings=False,
        use_cache=False, attn_implementation="sdpa")


# Reference (DeepSeek model.py) parameter names -> transformers names.
TOP_LEVEL = {"embed.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight",
             "head.weight": "lm_head.weight"}
RENAMES = [
    (".attn_norm.", ".input_layernorm."),
    (".ffn_norm.", ".post_attention_layernorm."), (".attn.wq_a.", ".self_attn.q_a_proj."),
    (".attn.q_norm.", ".self_attn.q_a_layernorm."), (".attn.wq_b.", ".self_attn.q_b_proj."),
    (".attn.wq.", ".self_attn.q_proj."), (".attn.wkv_a.", ".self_attn.kv_a_proj_with_mqa."),
    (".attn.kv_norm.", ".self_attn.kv_a_layernorm."), (".attn.wkv_b.", ".self_attn.kv_b_proj."),
    (".attn.wo.", ".self_attn.o_proj."), (".ffn.gate.bias", ".mlp.gate.e_score_correction_bias"),
    (".ffn.", ".mlp."), (".w1.", ".gate_proj."), (".w2.", ".down_proj."), (".w3.", ".up_proj."),
]


def hf_name(name):
    if name in TOP_LEVEL:
        return TOP_LEVEL[name]
    if name.startswith("layers."):
        name = "model." + name
    for old, new in RENAMES:
        name = name.replace(old, new)
    return name


def load_model(config_path, weights_path):
    with open(config_path) as f:
        config = json.load(f)
    if os.path.isdir(weights_path):
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained(weights_path, dtype=torch.float32, attn_implementation="sdpa")
        return config, model
    model = DeepseekV3ForCausalLM(hf_config(config["model"]))
    weights = {hf_name(k): v for k, v in load_file(weights_path).items()}
    expected = set(model.state_dict().keys())
    missing, unexpected = expected - set(weights), set(weights) - expected
    if missing or unexpected:
        sys.exit(f"weights do not fit the peer model: missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")
    model.load_state_dict(weights, strict=True)
    return config, model


def token_loss_sum(model, windows):
    """Summed next-token loss and the number of targets of [rows, L+1] windows."""
    logits = model(input_ids=windows[:, :-1]).logits
    targets = windows[:, 1:]
    loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="sum")
    return loss, targets.numel()


def read_tokens(path):
    return torch.from_numpy(np.fromfile(path, dtype="<u2").astype(np.int64))


def evaluate(args):
    config, model = load_model(args.config, args.weights)
    model.eval()
    tokens = read_tokens(args.tokens)
    L = config["train"]["seq_len"] + 1
    available = tokens.numel() // L
    count = min(config["train"]["eval_windows"], available) if config["train"]["eval_windows"] > 0 else available
    windows = tokens[: count * L].view(count, L)
    total, targets = 0.0, 0
    with torch.no_grad():
        for first in range(0, count, config["train"]["micro_batch_size"]):
            loss, n = token_loss_sum(model, windows[first:first + config["train"]["micro_batch_size"]])
            total += loss.double().item()
            targets += n
    print(json.dumps({"loss": total / targets, "tokens": targets, "windows": count}))


def train(args):
    config, model = load_model(args.config, args.weights)
    t = config["train"]
    m, K, L = t["micro_batch_size"], t["gradient_accumulation_steps"], t["seq_len"] + 1
    tokens = read_tokens(args.tokens)
    windows = tokens[: (tokens.numel() // L) * L].view(-1, L)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": t["weight_decay"]},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=t["lr"], betas=(t["beta1"], t["beta2"]), foreach=True)
    generator = torch.Generator().manual_seed(t["seed"])
    model.train()
    forward = torch.compile(model) if args.compile else model
    times, losses = [], []
    for step in range(args.steps):
        start = time.perf_counter()
        picks = torch.randint(0, windows.size(0), (K, m), generator=generator)
        step_sum, step_count = 0.0, 0
        for k in range(K):  # raw sums, divided by the step's token count: the exact rule
            # --bf16: products in bf16 under CPU autocast, weights and AdamW in fp32 (ours: runtime.dtype bf16)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
                loss, n = token_loss_sum(forward, windows[picks[k]])
            loss.backward()
            step_sum += loss.item()
            step_count += n
        for p in model.parameters():
            if p.grad is not None:
                p.grad.div_(step_count)
        torch.nn.utils.clip_grad_norm_(model.parameters(), t["grad_clip"])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
        losses.append(step_sum / step_count)
    measured = times[args.warmup:]
    tokens_per_step = m * K * (L - 1)
    print(json.dumps({"steps": args.steps, "warmup": args.warmup, "first_loss": losses[0], "final_loss": losses[-1],
                      "tokens_per_s": tokens_per_step * len(measured) / sum(measured),
                      "step_time_s_median": float(np.median(measured))}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["eval", "train"])
    parser.add_argument("config")
    parser.add_argument("weights")
    parser.add_argument("tokens")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compile", action="store_true", help="train torch.compile(model) (inductor, the default mode)")
    parser.add_argument("--bf16", action="store_true", help="forward under torch.autocast('cpu', torch.bfloat16)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    (evaluate if args.mode == "eval" else train)(args)


if __name__ == "__main__":
    main()
