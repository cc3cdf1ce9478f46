// Hugging Face datasets saved to disk (data.source hf_dataset): a `save_to_disk` folder's Arrow
// files, one record a row.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "data/document_builder.h"

namespace trainbench {

// The data files of the folder `path` (named by `field`), in the dataset's order: state.json's
// "_data_files" (data-00000-of-0000N.arrow ...). A DatasetDict folder (dataset_dict.json) is
// refused naming its splits; a folder without state.json, or one naming a missing file, is
// refused saying what `save_to_disk` writes. Throws ConfigError under `field`.
std::vector<std::filesystem::path> hfDatasetFiles(const std::string& path, const std::string& field);

// Reads one data file (an Arrow IPC stream, memory-mapped) into `out`: the columns `fields`
// names, as readParquetRecords does (string columns, nulls refused naming the row; a missing
// column named with the columns there are). Builds without Apache Arrow throw ConfigError
// under data.source.
void readHfDatasetRecords(const std::filesystem::path& file, const RecordFields& fields, DocumentBuilder& out,
                          const std::string& path_field);

}  // namespace trainbench
