// openTokenizer: reads the file once and hands its bytes to the reader its kind needs.
#include "tokenizer/tokenizer.h"

#include <cerrno>
#include <cstring>  // std::strerror
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/byte_level_bpe.h"
#include "tokenizer/sentencepiece_tokenizer.h"

namespace trainbench {

namespace {

constexpr const char* kWhatToGive = "give the path of a tokenizer.json (byte-level BPE) or a SentencePiece .model";

std::string readWhole(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw TokenizerError(path + ": is a folder, not a tokenizer file; " + kWhatToGive);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw TokenizerError(path + ": cannot open the tokenizer file (" + std::strerror(errno) + "); " + kWhatToGive);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in.bad()) throw TokenizerError(path + ": cannot read the tokenizer file (" + std::strerror(errno) + ")");
    return std::move(bytes).str();
}

bool looksLikeJson(const std::string& bytes) {
    size_t pos = bytes.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte order mark
    while (pos < bytes.size() && (bytes[pos] == ' ' || bytes[pos] == '\t' || bytes[pos] == '\n' || bytes[pos] == '\r'))
        ++pos;
    return pos < bytes.size() && bytes[pos] == '{';
}

}  // namespace

std::unique_ptr<Tokenizer> openTokenizer(const std::string& path) {
    const std::string bytes = readWhole(path);
    if (bytes.empty()) throw TokenizerError(path + ": the tokenizer file is empty; " + kWhatToGive);
    const std::string extension = std::filesystem::path(path).extension().string();
    if (extension == ".json" || (extension != ".model" && looksLikeJson(bytes)))
        return makeByteLevelBpe(path, bytes);
    return makeSentencePiece(path, bytes);
}

}  // namespace trainbench
