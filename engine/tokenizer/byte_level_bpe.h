// ByteLevelBpe: a byte-level BPE tokenizer read from a Hugging Face tokenizer.json, the format
// GPT-2, Llama 3, Qwen2 and DeepSeek-V3 ship; encodes as `tokenizers` does, id for id.
//
// What a tokenizer.json may contain (anything else is refused, naming the field and its value):
//   model          type "BPE" with vocab and merges ("a b" strings or ["a", "b"] pairs);
//                  ignore_merges; byte_fallback false; dropout null or 0;
//                  continuing_subword_prefix and end_of_word_suffix null or "";
//                  unk_token only when the vocabulary has all 256 byte symbols (it is then
//                  never used).
//   normalizer     null, "NFC", or a "Sequence" of those. NFC is NOT applied: the text must
//                  already be in NFC (as nearly all web text is); text that is not may encode
//                  differently from `tokenizers`. Normalise the corpus first when in doubt.
//   pre_tokenizer  "ByteLevel" (add_prefix_space, use_regex), "Split" (pattern {"Regex"} or
//                  {"String"}, any behavior, invert), "Digits" (individual_digits), or a
//                  "Sequence" of those; a ByteLevel step must be among them (without one the
//                  vocabulary is not byte-level). Regexes run in PCRE2, whose Unicode tables
//                  may differ from Oniguruma's for characters newer than either.
//   decoder        "ByteLevel" (or a "Sequence" holding only that).
//   added_tokens   every flag: single_word, lstrip, rstrip, normalized, special.
//   post_processor, truncation, padding: ignored, since encode() adds no special tokens and
//                  cuts nothing.
//
// Decoding spells each model token back through the byte alphabet and gives an added token's
// content as it is written (`tokenizers` passes both through its decoder, which differs only for
// added tokens made of byte-alphabet characters beyond ASCII).
#pragma once

#include <memory>  // std::unique_ptr
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace trainbench {

// Builds the tokenizer from the text of a tokenizer.json; `path` is for messages only.
std::unique_ptr<Tokenizer> makeByteLevelBpe(const std::string& path, std::string_view json_text);

}  // namespace trainbench
