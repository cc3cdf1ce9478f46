"""Greedy generation through Hugging Face transformers on a directory `trainbench-cli export-hf`
wrote: the peer of `trainbench-cli generate` on the same weights.

  hf_generate.py HF_DIR PROMPT_BYTES NEW_TOKENS ROWS REPEATS THREADS
    -> {"prefill_tokens_per_s": ..., "decode_tokens_per_s": ..., "ids": [...]}

The prompt is PROMPT_BYTES bytes of text (ids 0-255, as trainbench encodes text without a
tokenizer), the same prompt in each of ROWS rows, so no padding enters. Prefill is one forward
pass of the rows; decode is generate()'s remaining steps with the cache (its time less the
prefill's). The best of REPEATS. Bench-only (bench/peer/setup-peer.sh).
"""
import json
import sys
import time

import torch
from transformers import AutoModelForCausalLM


def main():
    hf_dir, prompt_bytes, new_tokens, rows, repeats, threads = sys.argv[1:]
    prompt_bytes, new_tokens, rows, repeats = int(prompt_bytes), int(new_tokens), int(rows), int(repeats)
    torch.set_num_threads(int(threads))
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    text = ("the cat sat on the mat and the dog ran in the park " * 8).encode()[:prompt_bytes]
    ids = torch.tensor([list(text)] * rows, dtype=torch.long)
    best_prefill, best_total, out = float("inf"), float("inf"), None
    with torch.inference_mode():
        for _ in range(repeats):
            start = time.perf_counter()
            model(ids, use_cache=True)
            best_prefill = min(best_prefill, time.perf_counter() - start)
            start = time.perf_counter()
            # Every row runs NEW_TOKENS steps: no end token, no early stop.
            out = model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                 eos_token_id=None, pad_token_id=0)
            best_total = min(best_total, time.perf_counter() - start)
    decode_seconds = max(best_total - best_prefill, 1e-9)
    print(json.dumps({"prefill_tokens_per_s": rows * prompt_bytes / best_prefill,
                      "decode_tokens_per_s": rows * (new_tokens - 1) / decode_seconds,
                      "ids": out[0, prompt_bytes:].tolist()}))


if __name__ == "__main__":
    main()
