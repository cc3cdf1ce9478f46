// What the data source decides in the form: the source a chosen file or folder is read as, and the data fields it reads.
#pragma once

#include <string>

#include <QString>

#include "trainbench/run_config.h"

namespace trainbench::gui {

// The data.source a path chosen for data.path is read as. A file by its name: .jsonl,
// .jsonl.gz, .jsonl.zst, .ndjson are JSON Lines (jsonl), .parquet is parquet, .bin is a token
// file (tokens), anything else text. A folder by the files it holds (hidden ones left out, as
// the engine leaves them): JSON Lines or Parquet files make it jsonl or parquet (both: the
// kind it holds more of, `current` on a tie), otherwise text. Only the folder's first
// kFolderLookLimit entries are looked at, so a folder as large as a disk answers at once.
std::string dataSourceForPath(const QString& path, const std::string& current);

constexpr int kFolderLookLimit = 10000;

// Whether data.<key> is read by the source of `data`: val_path and val_fraction by every
// source but markov; vocab_size, order, concentration and seed by markov; layout and tokenizer
// by the document sources (readsDocuments); doc_separator by text; dtype by tokens;
// text_field, prompt_field and completion_field by the record sources (jsonl, parquet). Every
// other key (source, path, one added later) counts as read. Never throws, whatever the source.
bool dataFieldRead(const QString& key, const DataConfig& data);

}  // namespace trainbench::gui
