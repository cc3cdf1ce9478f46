// TokenFileSource: mapping, validation on open (size, id range) and window reads of a .bin file.
#include "data/token_file_source.h"

#include <stdexcept>
#include <string>

#include "data/holdout.h"
#include "trainbench/config_io.h"

namespace trainbench {

TokenFileSource::TokenFileSource(const DataConfig& data, int64_t model_vocab)
    : vocab_(model_vocab), element_bytes_(tokenWidth(data) == TokenWidth::UInt32 ? 4 : 2) {
    file_ = mapAndCheck(data.path, "data.path");
    const int64_t total = static_cast<int64_t>(file_->size()) / element_bytes_;
    if (!data.val_path.empty()) {
        val_file_ = mapAndCheck(data.val_path, "data.val_path");
        train_ = {file_.get(), 0, total};
        val_ = {val_file_.get(), 0, static_cast<int64_t>(val_file_->size()) / element_bytes_};
    } else {
        const int64_t held = heldOutCount(total, data.val_fraction);
        train_ = {file_.get(), 0, total - held};
        val_ = {file_.get(), total - held, held};
    }
}

std::unique_ptr<MappedFile> TokenFileSource::mapAndCheck(const std::string& path, const std::string& field) const {
    auto file = std::make_unique<MappedFile>(path, field);
    const std::string where = field + " (\"" + path + "\")";
    const std::string dtype = element_bytes_ == 4 ? "uint32" : "uint16";
    if (file->size() == 0)
        throw ConfigError(field, where + ": the file is empty; point " + field + " at a file of " + dtype + " token ids");
    if (file->size() % element_bytes_ != 0)
        throw ConfigError("data.dtype", where + ": size " + std::to_string(file->size()) + " bytes is not a multiple of " +
                                            std::to_string(element_bytes_) + " (data.dtype \"" + dtype +
                                            "\"); the file is truncated or holds another element type: check data.dtype");
    // Every id must have an embedding row: one pass over the map, stopping at the first bad id.
    const int64_t n = static_cast<int64_t>(file->size()) / element_bytes_;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t id = element(*file, i);
        if (id >= vocab_)
            throw ConfigError(field, where + ": token id " + std::to_string(id) + " at byte offset " +
                                         std::to_string(i * element_bytes_) + " is not below model.vocab_size (" +
                                         std::to_string(vocab_) + "); the data and the model disagree on the vocabulary: "
                                         "raise model.vocab_size to at least " + std::to_string(id + 1) +
                                         ", or check data.dtype (" + dtype + ")");
    }
    return file;
}

int64_t TokenFileSource::element(const MappedFile& file, int64_t i) const {
    // Assembled byte by byte: little-endian on disk whatever the host's byte order.
    const uint8_t* p = file.data() + i * element_bytes_;
    if (element_bytes_ == 2) return int64_t{p[0]} | int64_t{p[1]} << 8;
    return int64_t{p[0]} | int64_t{p[1]} << 8 | int64_t{p[2]} << 16 | int64_t{p[3]} << 24;
}

int64_t TokenFileSource::sampleCount(Split split, int64_t length) const {
    return length > 0 ? part(split).count / length : 0;
}

void TokenFileSource::readSample(Split split, int64_t index, int64_t length, int64_t* out) const {
    const Part& p = part(split);
    if (index < 0 || index >= sampleCount(split, length))
        throw std::out_of_range("TokenFileSource: sample " + std::to_string(index) + " of " +
                                std::to_string(sampleCount(split, length)));
    const int64_t first = p.first + index * length;
    for (int64_t j = 0; j < length; ++j) out[j] = element(*p.file, first + j);
}

std::string TokenFileSource::fileProblem() const {
    for (const MappedFile* file : {file_.get(), val_file_.get()})
        if (file)
            if (std::string change = file->changeSinceMapped(); !change.empty()) return change;
    return {};
}

}  // namespace trainbench
