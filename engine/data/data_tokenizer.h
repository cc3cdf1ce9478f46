// data.tokenizer opened for the document sources and the exporters, its errors as config errors.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace trainbench {

// data.tokenizer opened; a bad file is a ConfigError naming data.tokenizer and what is wrong.
std::unique_ptr<Tokenizer> openDataTokenizer(const std::string& path);

}  // namespace trainbench
