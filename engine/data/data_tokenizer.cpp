// data.tokenizer: the tokenizer library's errors as ConfigErrors naming the field.
#include "data/data_tokenizer.h"

#include "trainbench/config_io.h"

namespace trainbench {

std::unique_ptr<Tokenizer> openDataTokenizer(const std::string& path) {
    try {
        return openTokenizer(path);
    } catch (const TokenizerError& e) {
        throw ConfigError("data.tokenizer", std::string("data.tokenizer: ") + e.what());
    }
}

}  // namespace trainbench
