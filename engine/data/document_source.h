// DocumentSource: the document sources (text, jsonl, parquet): files or records cut into
// documents, packed or padded.
#pragma once

#include <memory>
#include <vector>

#include "data/token_source.h"
#include "data/tokenized_documents.h"

namespace trainbench {

// Without a tokenizer the ids are the bytes and byte 0 (NUL) closes every document. Text has no
// NUL bytes, so the vocabulary stays the 256 byte values and any model with vocab_size >= 256
// reads text; a binary file's own zero bytes simply read as document ends. With data.tokenizer
// each document is its tokens followed by the tokenizer's own end-of-text token, and the
// vocabulary is the tokenizer's (data/tokenized_documents.h: cached, on every core).
constexpr int64_t kEndOfDocument = 0;

// `text`: documents are the files (every regular, non-hidden file of a folder, recursively, in
// sorted path order) split at data.doc_separator, empty pieces dropped. `jsonl` and `parquet`:
// each record is a document (data.text_field; an empty text is dropped), or a prompt/completion
// pair whose prompt tokens are inputs that never count as targets. Each document is followed
// by kEndOfDocument. Layout `packed`: the documents form one stream cut into non-overlapping
// windows of L tokens, the validation part is the stream's last data.val_fraction. Layout
// `padded`: sample i is document i, truncated to L tokens and padded with -1 (not counted),
// the validation part is the last data.val_fraction of the documents. data.val_path, when
// set, is read the same way and is the whole validation part.
class DocumentSource : public TokenSource {
public:
    // Reads every file now; throws ConfigError naming the field, the path and a fix.
    explicit DocumentSource(const DataConfig& data);

    int64_t vocabSize() const override { return vocab_size_; }
    int64_t sampleCount(Split split, int64_t length) const override;
    int64_t tokenCount(Split split) const override { return static_cast<int64_t>(part(split).ids.size()); }
    void readSample(Split split, int64_t index, int64_t length, int64_t* out) const override;
    bool hasPromptTokens() const override { return !train_.counted.empty() || !val_.counted.empty(); }
    void readCounted(Split split, int64_t index, int64_t length, uint8_t* counted) const override;
    // The tokens of a split that count as targets (the prompts' do not; end tokens do).
    int64_t countedTokens(Split split) const;

    // The text is read into memory at the start, so only a path that vanished is reported:
    // a resume would not find it.
    std::string fileProblem() const override;

    int64_t documentCount(Split split) const { return static_cast<int64_t>(part(split).starts.size()) - 1; }
    // The corpus's bytes read (both parts, before tokenising): tokens per byte is
    // (tokenCount(Train) + tokenCount(Validation)) / bytesRead().
    int64_t bytesRead() const { return bytes_read_; }
    // "byte-level BPE" | "SentencePiece", or "bytes" without data.tokenizer.
    std::string tokenizerKind() const { return tokenizer_ ? tokenizer_->kind() : "bytes"; }

private:
    using Part = Documents;  // ids: documents, each ending in its end token
    // The documents of `path` (data.path or data.val_path, named by `field`), tokenised.
    Part readDocuments(const DataConfig& data, const std::string& path, const std::string& field);
    static Part slice(const Part& all, int64_t first_doc, int64_t last_doc);
    // Where sample `index` of `length` positions lies in `p`: its first id and how many ids it
    // holds (a padded row's document may be shorter than the window).
    struct Span {
        int64_t first;
        int64_t available;
    };
    Span span(const Part& p, int64_t index, int64_t length) const;
    const Part& part(Split split) const { return split == Split::Train ? train_ : val_; }

    std::vector<std::string> paths_;  // data.path and data.val_path as given
    bool padded_;
    std::unique_ptr<Tokenizer> tokenizer_;  // data.tokenizer; null: bytes
    std::string tokenizer_hash_;
    int32_t end_token_ = static_cast<int32_t>(kEndOfDocument);
    int64_t vocab_size_ = 256;
    int64_t bytes_read_ = 0;
    Part train_, val_;
};

}  // namespace trainbench
