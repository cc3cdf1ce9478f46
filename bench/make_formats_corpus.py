"""The documents of bench/data_formats.sh in each format the document sources read.

Documents are the paragraphs (blank-line separated, stripped) of the repository's docs and C++
sources, shuffled with a fixed seed and repeated until the text reaches MEGABYTES. The same
documents are written as:
  corpus.txt       joined by blank lines (data.source text, data.doc_separator "\\n\\n")
  corpus.parquet   one row each, column "text", row groups of 16,384 rows, Snappy pages, no
                   dictionary (the repeated paragraphs would otherwise shrink to one copy each,
                   which real text does not)
  corpus.jsonl     one {"text": ...} object a line
Prints the documents' bytes (without separators). Run with the torch environment's python
(pyarrow). Usage: make_formats_corpus.py ROOT OUT MEGABYTES
"""

import json
import pathlib
import random
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def paragraphs(root):
    files = sorted(root.glob("docs/**/*.md")) + sorted(root.glob("engine/**/*.cpp"))
    files += sorted(root.glob("engine/**/*.h"))
    out = []
    for path in files:
        for piece in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            piece = piece.strip()
            if piece:
                out.append(piece)
    return out


def main():
    root, out, megabytes = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), float(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    pool = paragraphs(root)
    print(f"{len(pool)} distinct paragraphs, {sum(len(p.encode()) for p in pool)} bytes", file=sys.stderr)
    rng = random.Random(1234)
    documents, size = [], 0
    while size < megabytes * 1e6:
        rng.shuffle(pool)
        for p in pool:
            documents.append(p)
            size += len(p.encode("utf-8"))
            if size >= megabytes * 1e6:
                break
    (out / "corpus.txt").write_text("\n\n".join(documents), encoding="utf-8")
    pq.write_table(pa.table({"text": documents}), out / "corpus.parquet", row_group_size=16384, use_dictionary=False)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as f:
        for d in documents:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    print(size)


if __name__ == "__main__":
    main()
