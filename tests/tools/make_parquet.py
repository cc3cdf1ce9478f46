"""Writes the Parquet files of the Parquet suite (tests/engine/test_parquet.cpp) into a folder, with
pyarrow, so the files come from a writer independent of the reader under test. The records are
the ones the suite expects, written out again there by hand; each also goes to a JSON Lines file,
so the two sources can be compared.

Usage: make_parquet.py FOLDER
"""

import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

# Four documents over two row groups of two rows; the third is empty (dropped by the reader).
TEXTS = ["alpha beta", "\u03b3\u03b4 \u2713 na\u00efve \U0001F600", "", "last one"]
IDS = [10, 11, 12, 13]
# Prompt/completion pairs: a prompt longer than the suite's window, an empty completion.
PROMPTS = ["Q: what is twelve times twelve, in digits? A:", "Say nothing:", "Hi"]
COMPLETIONS = [" 144", "", " there"]


def write_jsonl(path, column_names, columns):
    with open(path, "w", encoding="utf-8") as out:
        for row in zip(*columns):
            out.write(json.dumps(dict(zip(column_names, row)), ensure_ascii=False) + "\n")


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    at = lambda name: os.path.join(folder, name)

    # The text dataset, with columns the run does not read around the one it does.
    texts = pa.table({"id": pa.array(IDS, pa.int64()), "text": pa.array(TEXTS, pa.string()),
                      "source": pa.array(["web"] * 4, pa.string())})
    pq.write_table(texts, at("text.parquet"), row_group_size=2)
    write_jsonl(at("text.jsonl"), ["id", "text", "source"], [IDS, TEXTS, ["web"] * 4])
    # The same texts as large strings (zstd pages), string views (gzip), and dictionary-encoded
    # (repeated values stored once; no compression).
    pq.write_table(pa.table({"text": pa.array(TEXTS, pa.large_string())}), at("large.parquet"), row_group_size=2,
                   compression="zstd")
    pq.write_table(pa.table({"text": pa.array(TEXTS, pa.string_view())}), at("view.parquet"), compression="gzip")
    pq.write_table(pa.table({"text": pa.array(TEXTS + TEXTS[:2]).dictionary_encode()}), at("dictionary.parquet"),
                   row_group_size=3, compression="none")

    pairs = pa.table({"prompt": PROMPTS, "completion": COMPLETIONS})
    pq.write_table(pairs, at("pairs.parquet"), row_group_size=2)
    write_jsonl(at("pairs.jsonl"), ["prompt", "completion"], [PROMPTS, COMPLETIONS])

    # A folder of two files: read in sorted path order, the folder's other files ignored.
    os.makedirs(at("folder/sub"), exist_ok=True)
    pq.write_table(pa.table({"text": ["from b"]}), at("folder/sub/b.parquet"))
    pq.write_table(pa.table({"text": ["from a"]}), at("folder/a.parquet"))
    with open(at("folder/notes.txt"), "w") as out:
        out.write("not data\n")

    # Bad input.
    pq.write_table(pa.table({"content": ["x"], "title": ["y"]}), at("other_schema.parquet"))
    pq.write_table(pa.table({"text": pa.array([1, 2], pa.int64()), "body": ["a", "b"]}), at("int_text.parquet"))
    pq.write_table(pa.table({"text": pa.array([b"\x00\x01"], pa.binary())}), at("binary_text.parquet"))
    pq.write_table(pa.table({"text": pa.array(["ok", "ok", "fine", None])}), at("null_text.parquet"),
                   row_group_size=2)
    with open(at("not_parquet.parquet"), "w") as out:
        out.write("text\nthis is a CSV file\n")
    whole = open(at("text.parquet"), "rb").read()
    with open(at("truncated.parquet"), "wb") as out:
        out.write(whole[: len(whole) // 2])
    # Row group 1's column chunk overwritten: the footer still reads, the group does not decode.
    damaged = bytearray(whole)
    chunk = pq.ParquetFile(at("text.parquet")).metadata.row_group(1).column(1)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    damaged[start:start + chunk.total_compressed_size] = b"\xff" * chunk.total_compressed_size
    with open(at("damaged_group.parquet"), "wb") as out:
        out.write(bytes(damaged))


if __name__ == "__main__":
    main()
