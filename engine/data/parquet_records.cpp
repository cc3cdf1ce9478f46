// Parquet records through Apache Arrow's reader: the schema checked once, then the wanted columns
// of one row group at a time decoded and walked row by row, so a file larger than memory reads in
// the memory of its largest row group.
#include "data/parquet_records.h"

#include <arrow/array.h>
#include <arrow/chunked_array.h>
#include <arrow/io/file.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/exception.h>

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "data/arrow_strings.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace {

// A column the run reads: its name, the setting that names it, its leaf index in the file.
struct WantedColumn {
    std::string name;
    std::string setting;  // data.text_field, data.prompt_field or data.completion_field
    int leaf = -1;
    int position = -1;  // in the row group's table, which holds each distinct column once
};

class ParquetRecordReader {
public:
    ParquetRecordReader(const std::filesystem::path& file, const RecordFields& fields, DocumentBuilder& out,
                        const std::string& path_field)
        : file_(file), out_(out), path_field_(path_field), where_(path_field + ": \"" + file.string() + "\"") {
        if (fields.pairs()) {
            wanted_.push_back({fields.prompt, "data.prompt_field"});
            wanted_.push_back({fields.completion, "data.completion_field"});
        } else {
            wanted_.push_back({fields.text, "data.text_field"});
        }
    }

    void read() {
        open();
        findColumns();
        int64_t first_row = 0;
        for (int group = 0; group < reader_->num_row_groups(); ++group) first_row += readRowGroup(group, first_row);
    }

private:
    void open() {
        auto file = arrow::io::ReadableFile::Open(file_.string());
        if (!file.ok())
            throw ConfigError(path_field_, where_ + ": cannot be opened (" + oneLine(file.status().message()) +
                                               "); check that it exists and is readable");
        parquet::arrow::FileReaderBuilder builder;
        // The footer is read here: a file cut short has none, so it fails as a non-Parquet file does.
        const arrow::Status opened = builder.Open(*file);
        if (!opened.ok())
            throw ConfigError(path_field_, where_ + ": not a Parquet file, or a truncated one (" +
                                               oneLine(opened.message()) + "); point " + path_field_ +
                                               " at Parquet files, or fetch this one again");
        auto reader = builder.Build();
        if (!reader.ok())
            throw ConfigError(path_field_, where_ + ": its Parquet schema cannot be read (" +
                                               oneLine(reader.status().message()) + "); write the file again");
        reader_ = std::move(reader).ValueUnsafe();
    }

    std::string columnNames(bool strings_only) const {
        std::string out;
        for (const parquet::arrow::SchemaField& f : reader_->manifest().schema_fields) {
            if (strings_only && !holdsStrings(*f.field->type())) continue;
            out += (out.empty() ? "" : ", ") + f.field->name();
        }
        return out.empty() ? "none" : out;
    }

    void findColumns() {
        const std::vector<parquet::arrow::SchemaField>& top = reader_->manifest().schema_fields;
        for (WantedColumn& w : wanted_) {
            const std::string which = "column \"" + w.name + "\" (" + w.setting + ")";
            int found = -1, count = 0;
            for (size_t i = 0; i < top.size(); ++i)
                if (top[i].field->name() == w.name) found = static_cast<int>(i), ++count;
            if (count == 0)
                throw ConfigError(w.setting, where_ + " has no " + which + "; its columns: " + columnNames(false) +
                                                 "; set " + w.setting + " to the one holding the text");
            if (count > 1)
                throw ConfigError(w.setting, where_ + " has " + std::to_string(count) + " columns named \"" + w.name +
                                                 "\" (" + w.setting + "); write the file with distinct column names");
            const parquet::arrow::SchemaField& field = top[found];
            if (!holdsStrings(*field.field->type()) || !field.is_leaf()) {
                const std::string strings = columnNames(true);
                throw ConfigError(w.setting, where_ + ": " + which + " holds " + field.field->type()->ToString() +
                                                 ", not strings; " +
                                                 (strings == "none" ? "the file has no string column: write the text "
                                                                      "as strings"
                                                                    : "its string columns: " + strings + "; set " +
                                                                          w.setting + " to one of them"));
            }
            w.leaf = field.column_index;
        }
        for (WantedColumn& w : wanted_) {
            for (size_t i = 0; i < leaves_.size(); ++i)
                if (leaves_[i] == w.leaf) w.position = static_cast<int>(i);
            if (w.position < 0) {
                w.position = static_cast<int>(leaves_.size());
                leaves_.push_back(w.leaf);
            }
        }
    }

    // Returns the group's row count.
    int64_t readRowGroup(int group, int64_t first_row) {
        const std::string at = where_ + " row group " + std::to_string(group);
        std::shared_ptr<arrow::Table> table;
        try {
            auto read = reader_->ReadRowGroup(group, leaves_);
            if (!read.ok())
                throw ConfigError(path_field_, at + ": cannot be decoded (" + oneLine(read.status().message()) +
                                                   "); the file is damaged: fetch or write it again");
            table = std::move(read).ValueUnsafe();
        } catch (const parquet::ParquetException& e) {
            throw ConfigError(path_field_, at + ": cannot be decoded (" + oneLine(e.what()) +
                                               "); the file is damaged: fetch or write it again");
        }
        std::vector<StringColumn> columns;
        for (int i = 0; i < table->num_columns(); ++i) columns.emplace_back(table->column(i));
        const auto text = [&](const WantedColumn& w, int64_t row) {
            const std::optional<std::string_view> value = columns[w.position].next();
            // A null is refused rather than read as an empty text or dropped: either would change
            // the dataset without a word, and a column with nulls is often not the one meant.
            if (!value)
                throw ConfigError(path_field_, at + ", row " + std::to_string(row) + " of the group (row " +
                                                   std::to_string(first_row + row) +
                                                   " of the file, counting from 0): column \"" + w.name + "\" (" +
                                                   w.setting + ") is null; every row needs a string there: filter "
                                                               "out or fill the null rows");
            return *value;
        };
        const int64_t rows = table->num_rows();
        for (int64_t row = 0; row < rows; ++row) {
            if (wanted_.size() == 2) {
                // Both are taken before adding, so a null completion never leaves half a pair.
                const std::string_view prompt = text(wanted_[0], row);
                out_.addPair(prompt, text(wanted_[1], row));
            } else {
                out_.addText(text(wanted_[0], row));
            }
        }
        return rows;
    }

    const std::filesystem::path& file_;
    DocumentBuilder& out_;
    const std::string& path_field_;
    const std::string where_;
    std::vector<WantedColumn> wanted_;
    std::vector<int> leaves_;  // the distinct leaf columns read, in the table's order
    std::unique_ptr<parquet::arrow::FileReader> reader_;
};

}  // namespace

void readParquetRecords(const std::filesystem::path& file, const RecordFields& fields, DocumentBuilder& out,
                        const std::string& path_field) {
    ParquetRecordReader(file, fields, out, path_field).read();
}

}  // namespace trainbench
