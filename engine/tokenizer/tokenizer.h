// Tokenizer: text to token ids and back, opened from a Hugging Face tokenizer.json (byte-level
// BPE) or a SentencePiece .model. Plain C++ (no torch, no Qt); the text data source uses it.
//
// Thread contract: a Tokenizer is immutable once opened. encode() and decode() are const and may
// run on several threads at once (each on its own text); the byte-level BPE keeps a per-thread
// cache of merged pieces, so nothing is shared between the threads but the read-only tables.
#pragma once

#include <cstdint>    // int32_t, int64_t
#include <memory>     // std::unique_ptr
#include <stdexcept>  // std::runtime_error
#include <string>
#include <string_view>
#include <vector>

namespace trainbench {

// A tokenizer file that cannot be used, or text it cannot encode. The message names the file,
// what is wrong (the JSON field or token, with its dotted path) and what to do about it.
class TokenizerError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    // The ids of `text` (valid UTF-8; anything else throws TokenizerError). No special tokens are
    // added: no BOS, no EOS, whatever the file's post_processor says. Special tokens written
    // literally in the text ("<|endoftext|>") are recognised and become their ids, as
    // `tokenizers` does with encode(text, add_special_tokens=False).
    virtual std::vector<int32_t> encode(std::string_view text) const = 0;
    // The text of `ids`, special tokens included (as their content). A byte sequence that is not
    // UTF-8 (ids that cut a character) comes back with U+FFFD in its place. An id the vocabulary
    // does not have throws TokenizerError.
    virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
    // The largest id + 1, added and special tokens included: the embedding rows a model needs.
    virtual int64_t vocabSize() const = 0;
    // The id that ends a document, -1 when the tokenizer has none. For tokenizer.json the first
    // of <|endoftext|>, <|end_of_text|>, <｜end▁of▁sentence｜>, </s>, <eos> found among the added
    // tokens (chat turn ends such as <|im_end|> or <|eot_id|> are not document ends); for
    // SentencePiece the model's eos_id().
    virtual int32_t endOfText() const = 0;
    // "byte-level BPE" or "SentencePiece".
    virtual std::string kind() const = 0;
};

// Opens `path`: a tokenizer.json by its .json extension or a leading '{', a SentencePiece model
// by its .model extension or otherwise. Throws TokenizerError for a missing or unreadable file,
// invalid JSON, a model type other than BPE, a normalizer, pre-tokenizer or decoder this reader
// does not implement (named), a merges entry naming a token the vocabulary lacks, or a corrupt
// .model. byte_level_bpe.h lists what a tokenizer.json may contain.
std::unique_ptr<Tokenizer> openTokenizer(const std::string& path);

}  // namespace trainbench
