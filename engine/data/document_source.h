// DocumentSource: the document sources (text, jsonl, parquet): files or records cut into
// documents, packed or padded.
#pragma once

#include <memory>
#include <vector>

#include "data/token_source.h"
#include "data/corpus_cache.h"
#include "data/data_tokenizer.h"

namespace trainbench {

// Without a tokenizer the ids are the bytes and byte 0 (NUL) closes every document. Text has no
// NUL bytes, so the vocabulary stays the 256 byte values and any model with vocab_size >= 256
// reads text; a binary file's own zero bytes simply read as document ends. With data.tokenizer
// each document is its tokens followed by the tokenizer's own end-of-text token, and the
// vocabulary is the tokenizer's (tokenised once on every core into the token cache,
// data/corpus_cache.h).
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
    // Opens (or first builds) the token cache of data.path and data.val_path
    // (data/corpus_cache.h); throws ConfigError naming the field, the path and a fix.
    explicit DocumentSource(const DataConfig& data);

    int64_t vocabSize() const override { return vocab_size_; }
    int64_t sampleCount(Split split, int64_t length) const override;
    int64_t tokenCount(Split split) const override { return part(split).id_count; }
    void readSample(Split split, int64_t index, int64_t length, int64_t* out) const override;
    bool hasPromptTokens() const override;
    void readCounted(Split split, int64_t index, int64_t length, uint8_t* counted) const override;
    // The tokens of a split that count as targets (the prompts' do not; end tokens do). Reads
    // the split's marks (one bit a token) when there are any.
    int64_t countedTokens(Split split) const;

    // The ids are read from the cache, so the data files may change freely; a path that vanished
    // is reported (a resume would not find it), and so is a cache file changed under its map.
    std::string fileProblem() const override;

    int64_t documentCount(Split split) const { return part(split).doc_count; }
    // The corpus's bytes read (both parts, before tokenising): tokens per byte is
    // (tokenCount(Train) + tokenCount(Validation)) / bytesRead().
    int64_t bytesRead() const;
    // "byte-level BPE" | "SentencePiece", or "bytes" without data.tokenizer.
    std::string tokenizerKind() const { return tokenizer_ ? tokenizer_->kind() : "bytes"; }

    // The token caches read: data.path's, then data.val_path's when set.
    struct CacheUse {
        std::string path;
        int64_t bytes;
        int id_bytes;
        bool built;  // false: reused
    };
    std::vector<CacheUse> caches() const;

private:
    // A split: ids [first_id, first_id + id_count) of a cache; in the padded layout its samples
    // are documents [first_doc, first_doc + doc_count).
    struct Part {
        const TokenCache* cache = nullptr;
        int64_t first_id = 0, id_count = 0;
        int64_t first_doc = 0, doc_count = 0;
    };
    struct Span {
        int64_t first;
        int64_t available;
    };
    Span span(const Part& p, int64_t index, int64_t length) const;
    const Part& part(Split split) const { return split == Split::Train ? train_ : val_; }

    std::vector<std::string> paths_;  // data.path and data.val_path as given
    bool padded_;
    std::unique_ptr<Tokenizer> tokenizer_;  // data.tokenizer; null: bytes
    int64_t vocab_size_ = 256;
    CachedCorpus corpus_, val_corpus_;  // val_corpus_: data.val_path's, when set
    Part train_, val_;
};

}  // namespace trainbench
