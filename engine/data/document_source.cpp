// DocumentSource: reading files and records into documents, splitting off validation, and the two layouts.
#include "data/document_source.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "data/data_files.h"
#include "data/document_builder.h"
#include "data/jsonl_records.h"
#include "data/parquet_records.h"
#include "data/holdout.h"
#include "files/sha256.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> readWholeFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return std::nullopt;
    return text;
}

}  // namespace

DocumentSource::DocumentSource(const DataConfig& data) : padded_(rowLayout(data) == RowLayout::Padded) {
    if (!data.tokenizer.empty()) {
        tokenizer_ = openDataTokenizer(data.tokenizer);
        end_token_ = tokenizer_->endOfText();
        if (end_token_ < 0)
            throw ConfigError("data.tokenizer", "data.tokenizer (\"" + data.tokenizer +
                                                    "\"): the tokenizer has no end-of-text token to close documents "
                                                    "with (none of <|endoftext|>, <|end_of_text|>, </s>, <eos>, "
                                                    "<｜end▁of▁sentence｜> among its added tokens); add one");
        vocab_size_ = tokenizer_->vocabSize();
        tokenizer_hash_ = sha256OfFile(data.tokenizer);
        paths_.push_back(data.tokenizer);
    }
    paths_.push_back(data.path);
    if (!data.val_path.empty()) paths_.push_back(data.val_path);
    Part all = readDocuments(data, data.path, "data.path");
    const int64_t docs = static_cast<int64_t>(all.starts.size()) - 1;
    if (!data.val_path.empty()) {
        train_ = std::move(all);
        val_ = readDocuments(data, data.val_path, "data.val_path");
    } else if (padded_) {
        // Rows are documents, so whole documents are held out.
        const int64_t held = heldOutCount(docs, data.val_fraction);
        train_ = slice(all, 0, docs - held);
        val_ = slice(all, docs - held, docs);
    } else {
        // A packed stream is held out by tokens: one long file still gets a validation part.
        const int64_t n = static_cast<int64_t>(all.ids.size());
        const int64_t held = heldOutCount(n, data.val_fraction);
        const int64_t cut = n - held;  // a document across the cut counts in both parts
        val_.ids.assign(all.ids.begin() + cut, all.ids.end());
        if (!all.counted.empty()) {
            val_.counted.assign(all.counted.begin() + cut, all.counted.end());
            all.counted.resize(cut);
            train_.counted = std::move(all.counted);
        }
        val_.starts = {0};
        for (int64_t start : all.starts) {
            if (start < cut) train_.starts.push_back(start);
            else if (start > cut) val_.starts.push_back(start - cut);
        }
        train_.starts.push_back(cut);
        all.ids.resize(cut);
        train_.ids = std::move(all.ids);
    }
}

DocumentSource::Part DocumentSource::readDocuments(const DataConfig& data, const std::string& path,
                                                   const std::string& field) {
    const std::string where = field + " (\"" + path + "\")";
    DocumentBuilder builder(static_cast<int32_t>(kEndOfDocument));
    const DataSource kind = dataSource(data);
    if (kind == DataSource::Jsonl || kind == DataSource::Parquet) {
        const bool jsonl = kind == DataSource::Jsonl;
        const RecordFields fields = RecordFields::of(data);
        const auto files = jsonl ? listDataFiles(path, field, jsonLinesSuffixes(), "JSON Lines files")
                                 : listDataFiles(path, field, {".parquet"}, "Parquet files");
        for (const fs::path& file : files)
            (jsonl ? readJsonLinesRecords : readParquetRecords)(file, fields, builder, field);
    } else {
        int64_t readable = 0;
        for (const fs::path& file : listDataFiles(path, field)) {
            std::optional<std::string> text = readWholeFile(file);
            if (!text) continue;  // an unreadable file in a folder is skipped; none readable is an error below
            ++readable;
            const std::string_view all(*text);
            const std::string& separator = data.doc_separator;
            size_t begin = 0;
            while (begin <= all.size()) {
                size_t end = separator.empty() ? std::string_view::npos : all.find(separator, begin);
                if (end == std::string_view::npos) end = all.size();
                if (end > begin) builder.addText(all.substr(begin, end - begin));
                begin = end + std::max<size_t>(separator.size(), 1);
            }
        }
        if (readable == 0)
            throw ConfigError(field, where + ": no file could be read; check the permissions of the files");
    }
    if (builder.documents() == 0)
        throw ConfigError(field, where + (kind == DataSource::Text
                                              ? ": no text (the files are empty or hold only separators); point " +
                                                    field + " at non-empty text"
                                              : ": no records with text (every record's text is empty); point " +
                                                    field + " at a dataset with text"));
    bytes_read_ += builder.bytes();
    Part out = builder.take();
    if (tokenizer_) return tokenizeDocuments(out, *tokenizer_, end_token_, tokenizer_hash_, where);
    return out;
}

DocumentSource::Part DocumentSource::slice(const Part& all, int64_t first_doc, int64_t last_doc) {
    Part out;
    const int64_t offset = all.starts[first_doc];
    out.ids.assign(all.ids.begin() + offset, all.ids.begin() + all.starts[last_doc]);
    if (!all.counted.empty())
        out.counted.assign(all.counted.begin() + offset, all.counted.begin() + all.starts[last_doc]);
    for (int64_t d = first_doc; d <= last_doc; ++d) out.starts.push_back(all.starts[d] - offset);
    return out;
}

int64_t DocumentSource::sampleCount(Split split, int64_t length) const {
    if (padded_) return documentCount(split);
    return length > 0 ? tokenCount(split) / length : 0;
}

DocumentSource::Span DocumentSource::span(const Part& p, int64_t index, int64_t length) const {
    if (!padded_) return {index * length, length};
    const int64_t first = p.starts[index];
    return {first, std::min(length, p.starts[index + 1] - first)};
}

void DocumentSource::readSample(Split split, int64_t index, int64_t length, int64_t* out) const {
    const Part& p = part(split);
    if (index < 0 || index >= sampleCount(split, length))
        throw std::out_of_range("DocumentSource: sample " + std::to_string(index) + " of " +
                                std::to_string(sampleCount(split, length)));
    const auto [first, available] = span(p, index, length);
    for (int64_t j = 0; j < available; ++j) out[j] = p.ids[first + j];
    std::fill(out + available, out + length, int64_t{-1});
}

void DocumentSource::readCounted(Split split, int64_t index, int64_t length, uint8_t* counted) const {
    const Part& p = part(split);
    const auto [first, available] = span(p, index, length);
    if (p.counted.empty()) std::fill(counted, counted + available, uint8_t{1});
    else std::copy(p.counted.begin() + first, p.counted.begin() + first + available, counted);
    std::fill(counted + available, counted + length, uint8_t{0});
}

int64_t DocumentSource::countedTokens(Split split) const {
    const Part& p = part(split);
    if (p.counted.empty()) return static_cast<int64_t>(p.ids.size());
    int64_t n = 0;
    for (uint8_t c : p.counted) n += c;
    return n;
}

std::string DocumentSource::fileProblem() const {
    for (const std::string& path : paths_) {
        std::error_code error;
        if (!fs::exists(path, error)) return path + " was removed during the run";
    }
    return {};
}

}  // namespace trainbench
