"""Token data for the speed benchmarks: a noisy arithmetic sequence over the vocabulary.

    python make_token_data.py DIR VOCAB   -> DIR/train.bin (90 %) and DIR/val.bin, uint16
"""
import sys

import numpy as np

work, vocab = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
n = 2_000_000
noise = rng.integers(0, 4, n)
x = np.zeros(n, dtype=np.int64)
for i in range(1, n):
    x[i] = (x[i - 1] * 7 + noise[i]) % vocab
x = x.astype("<u2")
x[: n * 9 // 10].tofile(f"{work}/train.bin")
x[n * 9 // 10:].tofile(f"{work}/val.bin")
