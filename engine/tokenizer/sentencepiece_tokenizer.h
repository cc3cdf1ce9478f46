// SentencePieceTokenizer: a SentencePiece .model (BPE or unigram) through libsentencepiece,
// encoding without BOS or EOS; normalisation is the model's own (usually NFKC with runs of
// whitespace collapsed), so decode(encode(text)) gives the normalised text back.
#pragma once

#include <memory>  // std::unique_ptr
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace trainbench {

// Builds the tokenizer from the bytes of a .model file; `path` is for messages only.
std::unique_ptr<Tokenizer> makeSentencePiece(const std::string& path, std::string_view model_bytes);

}  // namespace trainbench
