#include "generate/prompt_codec.h"

#include "trainbench/config_io.h"

namespace trainbench {

PromptCodec::PromptCodec(const DataConfig& data) {
    if (!readsDocuments(data))
        throw ConfigError("data.source", "data.source \"" + data.source +
                                             "\" has no text to encode prompts with; sampling needs a config whose "
                                             "data.source is \"text\", \"jsonl\" or \"parquet\" (bytes, or data.tokenizer)");
    if (data.tokenizer.empty()) return;
    try {
        tokenizer_ = openTokenizer(data.tokenizer);
    } catch (const TokenizerError& e) {
        throw ConfigError("data.tokenizer", e.what());
    }
}

std::vector<int64_t> PromptCodec::encode(const std::string& text, size_t which, const std::string& field) const {
    const std::string name = "prompt " + std::to_string(which + 1);
    if (text.empty()) throw ConfigError(field, name + " is empty");
    if (!tokenizer_) {
        std::vector<int64_t> out;
        for (unsigned char ch : text) out.push_back(ch);
        return out;
    }
    try {
        const auto ids = tokenizer_->encode(text);
        if (ids.empty()) throw ConfigError(field, name + " encodes to no tokens with data.tokenizer");
        return {ids.begin(), ids.end()};
    } catch (const TokenizerError& e) {
        throw ConfigError(field, name + ": " + e.what());
    }
}

std::string PromptCodec::decode(const std::vector<int64_t>& ids) const {
    if (!tokenizer_) {
        std::string out;
        for (int64_t id : ids) out.push_back(static_cast<char>(id));
        return out;
    }
    return tokenizer_->decode(std::vector<int32_t>(ids.begin(), ids.end()));
}

int64_t PromptCodec::endOfText() const { return tokenizer_ ? tokenizer_->endOfText() : 0; }

}  // namespace trainbench
