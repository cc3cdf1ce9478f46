"""Test helper: greedy continuations of prompts under transformers' own generate().

  hf_generate_greedy.py DIR NEW_TOKENS PROMPT [PROMPT ...]   -> {"ids": [[...], ...], "class": ...}

Each PROMPT is comma-separated token ids. DIR (a directory `export-hf` wrote) is loaded with
AutoModelForCausalLM in fp32; each prompt is continued alone (no padding enters) for exactly
NEW_TOKENS tokens: greedy, no end token, the cache on. Prints the new ids of each prompt. For the
round-trip tests only (tests/tools/setup-transformers-env.sh); never a product dependency.
"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM


def main():
    directory, new_tokens, prompts = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    out = []
    with torch.inference_mode():
        for prompt in prompts:
            ids = torch.tensor([[int(t) for t in prompt.split(",")]], dtype=torch.long)
            generated = model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                       eos_token_id=None, pad_token_id=0, use_cache=True)
            out.append(generated[0, ids.shape[1]:].tolist())
    print(json.dumps({"ids": out, "class": type(model).__name__}))


if __name__ == "__main__":
    main()
