// TokenFileSource: the `tokens` source, a flat little-endian uint16/uint32 id file (nanoGPT .bin).
#pragma once

#include <memory>

#include "data/mapped_file.h"
#include "data/token_source.h"

namespace trainbench {

// The file is memory-mapped, never copied. Samples are non-overlapping windows: sample i of a
// split covers tokens [i*L, (i+1)*L) of that split for windows of L tokens. The validation
// split is the file data.val_path when set, else the last data.val_fraction of data.path.
class TokenFileSource : public TokenSource {
public:
    // Maps and validates the files; throws ConfigError naming the file, the offending byte
    // offset and a fix. `model_vocab` bounds the ids (model.vocab_size).
    TokenFileSource(const DataConfig& data, int64_t model_vocab);

    int64_t vocabSize() const override { return vocab_; }
    int64_t sampleCount(Split split, int64_t length) const override;
    int64_t tokenCount(Split split) const override { return part(split).count; }
    void readSample(Split split, int64_t index, int64_t length, int64_t* out) const override;
    std::string fileProblem() const override;

private:
    struct Part {
        const MappedFile* file = nullptr;
        int64_t first = 0;  // in elements
        int64_t count = 0;
    };
    std::unique_ptr<MappedFile> mapAndCheck(const std::string& path, const std::string& field) const;
    const Part& part(Split split) const { return split == Split::Train ? train_ : val_; }
    int64_t element(const MappedFile& file, int64_t i) const;

    int64_t vocab_;
    int element_bytes_;
    std::unique_ptr<MappedFile> file_, val_file_;
    Part train_, val_;
};

}  // namespace trainbench
