// Documents of bytes to token ids with a tokenizer, on every core, cached on disk.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace trainbench {

// data.tokenizer opened; a bad file is a ConfigError naming data.tokenizer and what is wrong.
std::unique_ptr<Tokenizer> openDataTokenizer(const std::string& path);

struct Documents {
    std::vector<int32_t> ids;     // the documents back to back, each ending in its end token
    std::vector<int64_t> starts;  // document i is ids [starts[i], starts[i + 1]); size documents + 1
    // Per id: 1 when it counts as a target, 0 for a prompt's (an input, never a target); empty
    // when every id counts.
    std::vector<uint8_t> counted;
};

// `bytes` holds the documents' bytes, each followed by one end byte (starts as in Documents).
// Each document is tokenised without its end byte and followed by `end_token`. The result is
// read from the token cache when the same bytes were tokenised by the same tokenizer file
// (`tokenizer_hash`, the file's SHA-256) before, else computed over every core and written
// there (a failed write only loses the cache). `what` names the corpus in errors and progress.
Documents tokenizeDocuments(const Documents& bytes, const Tokenizer& tokenizer, int32_t end_token,
                            const std::string& tokenizer_hash, const std::string& what);

}  // namespace trainbench
