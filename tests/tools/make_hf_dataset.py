"""Writes the Hugging Face datasets of the hf_dataset test (tests/engine/test_hf_dataset.cpp) with
the `datasets` library itself: save_to_disk() folders, and the records load_from_disk() reads back
from them written as JSON Lines beside, so the C++ reader is compared with the library's own
reading of the same folder.

  FOLDER/docs/            a Dataset of texts in 3 shards (unicode, an empty text, a long one)
  FOLDER/docs.jsonl       load_from_disk(FOLDER/docs), one {"text": ...} a line
  FOLDER/pairs/           a Dataset of prompt/completion pairs (and an unused column)
  FOLDER/pairs.jsonl      load_from_disk(FOLDER/pairs)
  FOLDER/dict/            a DatasetDict of splits train and test
  FOLDER/numbers/         a Dataset whose column "text" holds integers

Usage: PYTHONPATH=<datasets site> python make_hf_dataset.py FOLDER
"""

import json
import os
import sys

import datasets


def dump(dataset, path, columns):
    with open(path, "w", encoding="utf-8") as out:
        for row in dataset:
            out.write(json.dumps({c: row[c] for c in columns}, ensure_ascii=False) + "\n")


def main():
    folder = sys.argv[1]
    texts = ["alpha beta", "\u03b3\u03b4 \u2713 na\u00efve \U0001F600", "", "x" * 5000]
    texts += ["document %d: %s" % (i, "word " * (i % 13)) for i in range(200)]
    docs = datasets.Dataset.from_dict({"text": texts, "id": list(range(len(texts)))})
    docs.save_to_disk(os.path.join(folder, "docs"), num_shards=3)
    dump(datasets.load_from_disk(os.path.join(folder, "docs")), os.path.join(folder, "docs.jsonl"), ["text"])

    pairs = datasets.Dataset.from_dict({
        "prompt": ["Q: what is twelve times twelve? A:", "Say nothing:", "Hi"] * 20,
        "completion": [" 144", "", " there"] * 20,
        "source": ["a", "b", "c"] * 20,
    })
    pairs.save_to_disk(os.path.join(folder, "pairs"))
    dump(datasets.load_from_disk(os.path.join(folder, "pairs")), os.path.join(folder, "pairs.jsonl"),
         ["prompt", "completion"])

    datasets.DatasetDict({"train": docs, "test": docs.select(range(4))}).save_to_disk(os.path.join(folder, "dict"))
    datasets.Dataset.from_dict({"text": [1, 2, 3]}).save_to_disk(os.path.join(folder, "numbers"))
    print(datasets.__version__)


if __name__ == "__main__":
    main()
