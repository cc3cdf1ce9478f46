// Documents of bytes to token ids with a tokenizer, on every core.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/document_builder.h"
#include "tokenizer/tokenizer.h"

namespace trainbench {

// A chunk's documents as token ids.
struct TokenizedChunk {
    std::vector<int32_t> ids;      // the documents back to back, each ending in its end token
    std::vector<uint8_t> counted;  // per id: 1 when it counts as a target, 0 for a prompt's
    std::vector<int64_t> ends;     // document i ends before ids[ends[i]]
};

// Each document of `chunk` (whole: chunk.last_open is false) is tokenised without its end byte
// and followed by `end_token`; a pair's prompt (its leading uncounted bytes) and its completion
// are tokenised apart, so no token straddles the two and the prompt's tokens are exact. Runs of
// documents go to every core and come back in order. Throws std::runtime_error on a tokenizer
// error.
TokenizedChunk tokenizeChunk(const ByteChunk& chunk, const Tokenizer& tokenizer, int32_t end_token);

}  // namespace trainbench
