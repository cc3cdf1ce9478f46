// TextSource: reading files into documents, splitting off validation, and the two layouts.
#include "data/text_source.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>

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

int64_t documentsIn(const Documents& d) { return static_cast<int64_t>(d.starts.size()) - 1; }

bool isHidden(const fs::path& path) { return path.filename().string().rfind('.', 0) == 0; }

// The files a text path stands for, in reading order. A folder is walked recursively; hidden
// entries (.git, .DS_Store) are not text of the corpus.
std::vector<fs::path> listFiles(const std::string& path, const std::string& field) {
    const std::string where = field + " (\"" + path + "\")";
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status))
        throw ConfigError(field, where + ": no such file or folder; check the path (relative paths start at the "
                                         "working directory)");
    if (fs::is_regular_file(status)) return {fs::path(path)};
    if (!fs::is_directory(status))
        throw ConfigError(field, where + ": neither a regular file nor a folder; point " + field + " at text files");
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        if (isHidden(it->path())) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty())
        throw ConfigError(field, where + ": the folder holds no regular files; put text files in it or point " + field +
                                         " at a file");
    return files;
}

}  // namespace

TextSource::TextSource(const DataConfig& data) : padded_(rowLayout(data) == RowLayout::Padded) {
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
    Part all = readDocuments(data.path, "data.path", data.doc_separator);
    const int64_t docs = static_cast<int64_t>(all.starts.size()) - 1;
    if (!data.val_path.empty()) {
        train_ = std::move(all);
        val_ = readDocuments(data.val_path, "data.val_path", data.doc_separator);
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

TextSource::Part TextSource::readDocuments(const std::string& path, const std::string& field,
                                           const std::string& separator) {
    const std::string where = field + " (\"" + path + "\")";
    Part out;
    out.starts.push_back(0);
    int64_t readable = 0;
    for (const fs::path& file : listFiles(path, field)) {
        std::optional<std::string> text = readWholeFile(file);
        if (!text) continue;  // an unreadable file in a folder is skipped; none readable is an error below
        ++readable;
        const std::string_view all(*text);
        size_t begin = 0;
        while (begin <= all.size()) {
            size_t end = separator.empty() ? std::string_view::npos : all.find(separator, begin);
            if (end == std::string_view::npos) end = all.size();
            if (end > begin) {
                for (size_t i = begin; i < end; ++i) out.ids.push_back(static_cast<uint8_t>(all[i]));
                out.ids.push_back(static_cast<int32_t>(kEndOfDocument));
                out.starts.push_back(static_cast<int64_t>(out.ids.size()));
            }
            begin = end + std::max<size_t>(separator.size(), 1);
        }
    }
    if (readable == 0)
        throw ConfigError(field, where + ": no file could be read; check the permissions of the files");
    if (out.ids.empty())
        throw ConfigError(field, where + ": no text (the files are empty or hold only separators); point " + field +
                                         " at non-empty text");
    bytes_read_ += static_cast<int64_t>(out.ids.size()) - documentsIn(out);
    if (tokenizer_) return tokenizeDocuments(out, *tokenizer_, end_token_, tokenizer_hash_, where);
    return out;
}

TextSource::Part TextSource::slice(const Part& all, int64_t first_doc, int64_t last_doc) {
    Part out;
    const int64_t offset = all.starts[first_doc];
    out.ids.assign(all.ids.begin() + offset, all.ids.begin() + all.starts[last_doc]);
    for (int64_t d = first_doc; d <= last_doc; ++d) out.starts.push_back(all.starts[d] - offset);
    return out;
}

int64_t TextSource::sampleCount(Split split, int64_t length) const {
    if (padded_) return documentCount(split);
    return length > 0 ? tokenCount(split) / length : 0;
}

void TextSource::readSample(Split split, int64_t index, int64_t length, int64_t* out) const {
    const Part& p = part(split);
    if (index < 0 || index >= sampleCount(split, length))
        throw std::out_of_range("TextSource: sample " + std::to_string(index) + " of " +
                                std::to_string(sampleCount(split, length)));
    int64_t first = index * length, available = length;
    if (padded_) {
        first = p.starts[index];
        available = std::min(length, p.starts[index + 1] - first);
    }
    for (int64_t j = 0; j < available; ++j) out[j] = p.ids[first + j];
    std::fill(out + available, out + length, int64_t{-1});
}

std::string TextSource::fileProblem() const {
    for (const std::string& path : paths_) {
        std::error_code error;
        if (!fs::exists(path, error)) return path + " was removed during the run";
    }
    return {};
}

}  // namespace trainbench
