"""The data benchmarks' tokenizer: a byte-level BPE of 8,192 ids (and <|endoftext|>) trained with
Hugging Face `tokenizers` on the first 8 MB of a text file. Run with the tokenizers test
environment's python (tests/tools/setup-tokenizers-env.sh). Usage: train_bpe.py TEXT OUT.json
"""

import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

tokenizer = Tokenizer(models.BPE())
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=8192, special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
text = open(sys.argv[1], encoding="utf-8").read(8_000_000)
tokenizer.train_from_iterator([text], trainer)
tokenizer.save(sys.argv[2])
