// Hugging Face datasets on disk: each data file an Arrow IPC stream, memory-mapped and read batch
// by batch.
#include "data/hf_dataset_records.h"

#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <arrow/record_batch.h>

#include "data/arrow_strings.h"
#include "trainbench/config_io.h"

namespace trainbench {

void readHfDatasetRecords(const std::filesystem::path& file, const RecordFields& fields, DocumentBuilder& out,
                          const std::string& path_field) {
    const std::string where = path_field + ": \"" + file.string() + "\"";
    auto mapped = arrow::io::MemoryMappedFile::Open(file.string(), arrow::io::FileMode::READ);
    if (!mapped.ok())
        throw ConfigError(path_field, where + ": cannot be opened (" + oneLine(mapped.status().message()) +
                                          "); check that it exists and is readable");
    auto opened = arrow::ipc::RecordBatchStreamReader::Open(*mapped);
    if (!opened.ok())
        throw ConfigError(path_field, where + ": not an Arrow stream, or a truncated one (" +
                                          oneLine(opened.status().message()) + "); save the dataset again");
    const std::shared_ptr<arrow::ipc::RecordBatchReader> reader = *opened;
    const std::shared_ptr<arrow::Schema> schema = reader->schema();

    struct Wanted {
        std::string name, setting;
        int index = -1;
    };
    std::vector<Wanted> wanted;
    if (fields.pairs()) wanted = {{fields.prompt, "data.prompt_field"}, {fields.completion, "data.completion_field"}};
    else wanted = {{fields.text, "data.text_field"}};
    auto columns = [&](bool strings_only) {
        std::string names;
        for (const auto& f : schema->fields())
            if (!strings_only || holdsStrings(*f->type())) names += (names.empty() ? "" : ", ") + f->name();
        return names.empty() ? std::string("none") : names;
    };
    for (Wanted& w : wanted) {
        w.index = schema->GetFieldIndex(w.name);
        const std::string which = "column \"" + w.name + "\" (" + w.setting + ")";
        if (w.index < 0)
            throw ConfigError(w.setting, where + " has no " + which + " (or several); its columns: " + columns(false) +
                                             "; set " + w.setting + " to the one holding the text");
        if (!holdsStrings(*schema->field(w.index)->type()))
            throw ConfigError(w.setting, where + ": " + which + " holds " + schema->field(w.index)->type()->ToString() +
                                             ", not strings; its string columns: " + columns(true) + "; set " +
                                             w.setting + " to one of them");
    }
    int64_t first_row = 0;
    for (int64_t batch_number = 0;; ++batch_number) {
        std::shared_ptr<arrow::RecordBatch> batch;
        const arrow::Status read = reader->ReadNext(&batch);
        if (!read.ok())
            throw ConfigError(path_field, where + " record batch " + std::to_string(batch_number) + ": cannot be read (" +
                                              oneLine(read.message()) + "); the file is damaged: save the dataset again");
        if (!batch) break;
        std::vector<StringColumn> text;
        for (const Wanted& w : wanted)
            text.emplace_back(std::make_shared<arrow::ChunkedArray>(batch->column(w.index)));
        auto value = [&](size_t column, int64_t row) {
            const std::optional<std::string_view> v = text[column].next();
            if (!v)
                throw ConfigError(path_field, where + " row " + std::to_string(first_row + row) +
                                                  " (counting from 0): column \"" + wanted[column].name + "\" (" +
                                                  wanted[column].setting + ") is null; every row needs a string there: "
                                                  "filter out or fill the null rows");
            return *v;
        };
        for (int64_t row = 0; row < batch->num_rows(); ++row) {
            if (wanted.size() == 2) {
                const std::string_view prompt = value(0, row);  // both taken before adding: no half pair
                out.addPair(prompt, value(1, row));
            } else {
                out.addText(value(0, row));
            }
        }
        first_row += batch->num_rows();
    }
}

}  // namespace trainbench
