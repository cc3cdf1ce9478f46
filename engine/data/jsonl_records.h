// JSON Lines records (data.source jsonl): one JSON object a line, plain, gzip or zstd.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "data/document_builder.h"

namespace trainbench {

// The names a folder's JSON Lines files end in (a file named directly is read whatever its name).
const std::vector<std::string>& jsonLinesSuffixes();

// Streams `file` line by line into `out`: each non-blank line a JSON object whose `fields` hold
// strings (a trailing CR is dropped, so CRLF files read as LF ones). A line that is not a JSON
// object, a missing field or a value that is not a string throws ConfigError naming the file,
// the line number and the field, under `path_field` (data.path or data.val_path) or the
// data.*_field setting at fault; so does a corrupt or truncated compressed file.
void readJsonLinesRecords(const std::filesystem::path& file, const RecordFields& fields, DocumentBuilder& out,
                          const std::string& path_field);

}  // namespace trainbench
