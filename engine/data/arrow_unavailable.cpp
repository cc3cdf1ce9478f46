// The Arrow readers (parquet, hf_dataset) of a build configured without Apache Arrow
// (cmake/arrow_parquet.cmake): they refuse the source with the way to get it.
#include "data/hf_dataset_records.h"
#include "data/parquet_records.h"

#include "trainbench/config_io.h"

namespace trainbench {

void readParquetRecords(const std::filesystem::path& file, const RecordFields&, DocumentBuilder&,
                        const std::string&) {
    throw ConfigError("data.source",
                      "data.source \"parquet\" (\"" + file.string() +
                          "\"): this build has no Parquet reader (no Apache Arrow C++ libraries were found when it "
                          "was configured); run scripts/setup-torch.sh, which installs pyarrow into the torch "
                          "environment, and rebuild, or convert the data to JSON Lines (data.source \"jsonl\")");
}

void readHfDatasetRecords(const std::filesystem::path& file, const RecordFields&, DocumentBuilder&,
                          const std::string&) {
    throw ConfigError("data.source",
                      "data.source \"hf_dataset\" (\"" + file.string() +
                          "\"): this build has no Arrow reader (no Apache Arrow C++ libraries were found when it was "
                          "configured); run scripts/setup-torch.sh, which installs pyarrow into the torch environment, "
                          "and rebuild, or write the dataset as JSON Lines (Dataset.to_json)");
}

}  // namespace trainbench
