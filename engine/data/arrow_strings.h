// Arrow string columns as the record readers take them (parquet, hf_dataset): which types hold
// text, and a column read row by row across its chunks. Included by Arrow-built files only.
#pragma once

#include <arrow/array.h>
#include <arrow/chunked_array.h>
#include <arrow/type.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace trainbench {

// string, large_string, string_view, or a dictionary of them (repeated texts stored once).
bool holdsStrings(const arrow::DataType& type);

// Arrow's messages may run over several lines (Thrift's do); ours are one line.
std::string oneLine(const std::string& message);

// One string column, row after row across its chunks (the two columns of a pair may be chunked
// differently, so each keeps its own place).
class StringColumn {
public:
    explicit StringColumn(std::shared_ptr<arrow::ChunkedArray> data) : data_(std::move(data)) {}

    // The next row's text; nullopt for a null.
    std::optional<std::string_view> next();

private:
    std::shared_ptr<arrow::ChunkedArray> data_;
    int next_chunk_ = 0;
    const arrow::Array* chunk_ = nullptr;
    const arrow::DictionaryArray* dictionary_ = nullptr;
    const arrow::Array* values_ = nullptr;  // the strings: the chunk, or its dictionary
    int64_t row_ = 0;
};

}  // namespace trainbench
