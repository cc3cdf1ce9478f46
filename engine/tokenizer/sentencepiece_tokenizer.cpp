// SentencePieceTokenizer: libsentencepiece behind the Tokenizer interface (see the header).
#include "tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

namespace trainbench {

namespace {

class SentencePieceTokenizer : public Tokenizer {
public:
    SentencePieceTokenizer(std::string path, std::string_view model_bytes) : path_(std::move(path)) {
        const auto status = processor_.LoadFromSerializedProto(model_bytes);
        if (!status.ok())
            throw TokenizerError(path_ + ": is not a SentencePiece model: libsentencepiece cannot load it (" +
                                 status.ToString() +
                                 "); give a .model file written by spm_train or shipped as tokenizer.model, or a "
                                 "tokenizer.json");
        if (processor_.GetPieceSize() <= 0)
            throw TokenizerError(path_ + ": the SentencePiece model has no pieces; the file is damaged");
    }

    // SentencePieceProcessor's Encode and Decode are const and keep no state between calls (its
    // maintainers call them safe to use from several threads, google/sentencepiece#207 and #657),
    // so the thread contract of tokenizer.h holds without a lock.
    std::vector<int32_t> encode(std::string_view text) const override {
        std::vector<int> ids;
        if (const auto status = processor_.Encode(text, &ids); !status.ok())
            throw TokenizerError(path_ + ": SentencePiece could not encode the text (" + status.ToString() + ")");
        return {ids.begin(), ids.end()};
    }

    std::string decode(const std::vector<int32_t>& ids) const override {
        const int size = processor_.GetPieceSize();
        for (int32_t id : ids)
            if (id < 0 || id >= size)
                throw TokenizerError(path_ + ": cannot decode id " + std::to_string(id) +
                                     ": the vocabulary has no such piece (its ids run from 0 to " +
                                     std::to_string(size - 1) + ")");
        std::string text;
        if (const auto status = processor_.Decode(std::vector<int>(ids.begin(), ids.end()), &text); !status.ok())
            throw TokenizerError(path_ + ": SentencePiece could not decode (" + status.ToString() + ")");
        return text;
    }

    int64_t vocabSize() const override { return processor_.GetPieceSize(); }
    int32_t endOfText() const override { return processor_.eos_id(); }
    std::string kind() const override { return "SentencePiece"; }

private:
    std::string path_;
    sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace

std::unique_ptr<Tokenizer> makeSentencePiece(const std::string& path, std::string_view model_bytes) {
    return std::make_unique<SentencePieceTokenizer>(path, model_bytes);
}

}  // namespace trainbench
