// Prompts to token ids and back, as the run's data section reads text: through data.tokenizer,
// or as bytes. What `generate` and the samples written during training encode with.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "trainbench/run_config.h"

namespace trainbench {

class PromptCodec {
public:
    // ConfigError naming data.source when the data has no text (markov, tokens), or
    // data.tokenizer when it cannot be opened.
    explicit PromptCodec(const DataConfig& data);
    // ConfigError naming `field` for an empty prompt or one the tokenizer cannot encode; `which`
    // counts from 0 and is said from 1.
    std::vector<int64_t> encode(const std::string& text, size_t which, const std::string& field) const;
    std::string decode(const std::vector<int64_t>& ids) const;
    // The token that ends a document: the tokenizer's end of text, or byte 0 (data.layout packed).
    int64_t endOfText() const;

private:
    std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace trainbench
