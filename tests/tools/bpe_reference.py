#!/usr/bin/env python3
"""Reference byte-level BPE tokenizations for tests/engine/test_tokenizer.cpp.

Trains small byte-level BPE tokenizers with Hugging Face `tokenizers` (the test-only
environment of tests/tools/setup-tokenizers-env.sh), saves each as a tokenizer.json, and writes
what `tokenizers` itself makes of a list of documents: the ids (add_special_tokens=False), the
decoded text, and the decoding of every other id (to exercise broken UTF-8 in decode).

Usage: bpe_reference.py CORPUS_JSON OUT_DIR
  CORPUS_JSON  {"train": [document, ...], "encode": [document, ...]}
  OUT_DIR      receives <variant>.json tokenizers and reference.json:
               {"variants": [{"name", "file", "vocab_size", "max_id_plus_one",
                              "end_of_text", "ids": [[...], ...], "decoded": [...],
                              "every_other_decoded": [...]}, ...]}

The variants:
  gpt2         ByteLevel pre-tokenizer with the GPT-2 regex, <|endoftext|> special.
  gpt2-legacy  The same file with its merges written as "a b" strings (the older format).
  llama3       Split on the Llama 3 regex + ByteLevel(use_regex=false), ignore_merges, special
               tokens past the model vocabulary (ids beyond it, as Llama 3's reserved ones), and
               whole words added to the vocabulary that only ignore_merges emits in one piece.
  mixed        NFC normalizer; Splits with every behaviour and invert (one written with \\uHHHH
               escapes), Digits, ByteLevel with
               add_prefix_space; added tokens with lstrip, rstrip, single_word and normalized.
"""
import json
import pathlib
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

GPT2_EOS = "<|endoftext|>"
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def train(documents, pre_tokenizer, special_tokens, ignore_merges=False, normalizer=None):
    tokenizer = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(documents, trainer)
    return tokenizer


def gpt2(documents):
    return train(documents, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), [GPT2_EOS]), GPT2_EOS


def llama3(documents):
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer = train(documents, pre, ["<|begin_of_text|>", "<|end_of_text|>"], ignore_merges=True)
    tokenizer.add_special_tokens([f"<|reserved_special_token_{i}|>" for i in range(4)])
    return tokenizer, "<|end_of_text|>"


def mixed(documents):
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\p{N}{1,3}"), behavior="isolated"),
        # Oniguruma's \uHHHH escapes, as DeepSeek's tokenizer.json writes its CJK ranges.
        pre_tokenizers.Split(Regex(r"[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"), behavior="isolated"),
        pre_tokenizers.Split("\n", behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\t+"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"[^.,;:]+"), behavior="contiguous", invert=True),
        pre_tokenizers.Split("--", behavior="removed"),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True),
    ])
    tokenizer = train(documents, pre, ["</s>"], normalizer=normalizers.NFC())
    tokenizer.add_special_tokens([
        AddedToken("<mask>", lstrip=True, special=True),
        AddedToken("<rs>", rstrip=True, special=True),
        AddedToken("<sw>", single_word=True, special=True),
    ])
    tokenizer.add_tokens([AddedToken("hello world", normalized=True), AddedToken("привет", normalized=False)])
    return tokenizer, "</s>"


def with_whole_words(path, words):
    """Adds vocab entries that merges cannot reach, so ignore_merges decides how they encode."""
    data = json.loads(path.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    # `tokenizers` numbers added tokens that are not in the model vocabulary from its size on, when
    # it loads a file; the new words go right after the model's ids and those added tokens move up.
    first_new = len(vocab)
    assert sorted(vocab.values()) == list(range(first_new))
    next_id = first_new
    spell = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    before = Tokenizer.from_file(str(path))
    # Only words the merges split, added once each: the ids stay without gaps.
    split = [w for w in words if len(before.encode(w).ids) > 1]
    assert split, "every candidate word is already one token; choose longer ones"
    for word in split:
        vocab[spell.pre_tokenize_str(word)[0][0]] = next_id
        next_id += 1
    for token in data["added_tokens"]:
        if token["id"] >= first_new:
            token["id"] += len(split)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    tokenizer = Tokenizer.from_file(str(path))
    for word in split:
        assert len(tokenizer.encode(word).ids) == 1, f"ignore_merges did not keep {word!r} whole"
    return tokenizer


def with_legacy_merges(path, legacy_path):
    data = json.loads(path.read_text(encoding="utf-8"))
    merges = data["model"]["merges"]
    # Byte-level symbols never contain a space (it maps to "Ġ"), so "a b" is unambiguous.
    assert all(" " not in a and " " not in b for a, b in merges)
    data["model"]["merges"] = [f"{a} {b}" for a, b in merges]
    legacy_path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def reference(name, path, tokenizer, eos, documents):
    ids = [tokenizer.encode(d, add_special_tokens=False).ids for d in documents]
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    return {
        "name": name,
        "file": path.name,
        "vocab_size": tokenizer.get_vocab_size(with_added_tokens=True),
        "max_id_plus_one": max(vocab.values()) + 1,
        "end_of_text": -1 if eos is None else tokenizer.token_to_id(eos),
        "ids": ids,
        "decoded": [tokenizer.decode(i, skip_special_tokens=False) for i in ids],
        "every_other_decoded": [tokenizer.decode(i[::2], skip_special_tokens=False) for i in ids],
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    corpus = json.loads(pathlib.Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    train_docs, encode_docs = corpus["train"], corpus["encode"]

    variants = []
    for name, build in (("gpt2", gpt2), ("llama3", llama3), ("mixed", mixed)):
        tokenizer, eos = build(train_docs)
        path = out / f"{name}.json"
        tokenizer.save(str(path))
        if name == "llama3":
            tokenizer = with_whole_words(path, [" document", " square", " résumé", " русский", " remarkable"])
        variants.append(reference(name, path, tokenizer, eos, encode_docs))
        if name == "gpt2":
            legacy = out / "gpt2-legacy.json"
            with_legacy_merges(path, legacy)
            reloaded = Tokenizer.from_file(str(legacy))
            variants.append(reference("gpt2-legacy", legacy, reloaded, eos, encode_docs))
            assert variants[-1]["ids"] == variants[-2]["ids"], "legacy merges changed the encoding"

    (out / "reference.json").write_text(json.dumps({"variants": variants}, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
