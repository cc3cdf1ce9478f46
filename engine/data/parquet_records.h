// Parquet records (data.source parquet): one record a row, read row group by row group.
#pragma once

#include <filesystem>
#include <string>

#include "data/document_builder.h"

namespace trainbench {

// Reads `file`'s rows into `out`: the columns `fields` names (only those are read), each a string
// column (plain, large or dictionary-encoded). A file that is not Parquet (or is truncated), a
// row group that cannot be decoded, or a null value throws ConfigError under `path_field`
// (data.path or data.val_path) naming the file, the row group, the row and the column; a missing
// column or one that does not hold strings throws it under the data.*_field setting at fault,
// listing the file's columns. Builds without Apache Arrow throw ConfigError under data.source.
void readParquetRecords(const std::filesystem::path& file, const RecordFields& fields, DocumentBuilder& out,
                        const std::string& path_field);

}  // namespace trainbench
