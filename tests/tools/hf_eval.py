"""Test helper: the validation loss of a Hugging Face directory under transformers.

  hf_eval.py DIR VAL.bin SEQ_LEN WINDOWS MICRO_BATCH   -> {"loss": ..., "tokens": ..., "class": ...}
  hf_eval.py DIR VAL.txt SEQ_LEN WINDOWS MICRO_BATCH   (text: tokenised by DIR's own tokenizer)

Loads DIR with AutoModelForCausalLM in fp32 (whatever dtype it is stored in), takes the first
WINDOWS windows of SEQ_LEN + 1 tokens of the validation stream and prints the mean next-token
loss. VAL.bin holds little-endian uint16 ids back to back (the tokens source's layout); a .txt
file is cut into documents at blank lines, each tokenised by AutoTokenizer from DIR (no special
tokens added) and followed by its eos token, as the text source packs them. For the round-trip
tests only (tests/tools/setup-transformers-env.sh); never a product dependency.
"""
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM


def main():
    directory, val_path, seq_len, windows, micro_batch = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
    model.eval()
    if val_path.endswith(".txt"):
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(directory)
        with open(val_path, encoding="utf-8", newline="") as f:
            documents = [d for d in f.read().split("\n\n") if d]
        ids = []
        for d in documents:
            ids += tokenizer(d, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        tokens = torch.tensor(ids, dtype=torch.int64)
    else:
        tokens = torch.from_numpy(np.fromfile(val_path, dtype="<u2").astype(np.int64))
    L = seq_len + 1
    count = min(windows, tokens.numel() // L)
    rows = tokens[: count * L].view(count, L)
    total, targets = 0.0, 0
    with torch.no_grad():
        for first in range(0, count, micro_batch):
            batch = rows[first:first + micro_batch]
            logits = model(input_ids=batch[:, :-1]).logits
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1), reduction="sum")
            total += loss.double().item()
            targets += batch[:, 1:].numel()
    print(json.dumps({"loss": total / targets, "tokens": targets, "class": type(model).__name__}))


if __name__ == "__main__":
    main()
