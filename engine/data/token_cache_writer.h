// TokenCacheWriter: byte documents in, a token cache file out, in memory bounded by two chunks.
#pragma once

#include <cstdint>
#include <exception>
#include <fstream>
#include <string>
#include <thread>

#include "data/document_builder.h"
#include "data/token_cache.h"
#include "tokenizer/tokenizer.h"

namespace trainbench {

class TokenCacheWriter {
public:
    // Writes `path` + ".partial.<pid>" (and two side files beside it: the starts and the marks)
    // and renames it to `path` in commit(); nothing appears at `path` before. Ids are the bytes
    // without a tokenizer, else each document's tokens and `end_token` (a pair's prompt and
    // completion tokenised apart, so no token straddles the two).
    TokenCacheWriter(std::string path, uint32_t width, const Tokenizer* tokenizer, int32_t end_token,
                     std::string fingerprint);
    // Without commit(): the partial files are removed.
    ~TokenCacheWriter();
    TokenCacheWriter(const TokenCacheWriter&) = delete;
    TokenCacheWriter& operator=(const TokenCacheWriter&) = delete;

    // Tokenises the chunk on every core while the caller reads the next one, then appends it.
    // Rethrows a tokenizer or write error of an earlier chunk.
    void add(ByteChunk&& chunk);
    // Waits for the last chunk, writes the index and the header, renames the file into place.
    // Throws std::runtime_error when the file cannot be written (a full disk).
    void commit(int64_t bytes_read);

private:
    void wait();
    void append(const ByteChunk& chunk);
    void writeIds(const int32_t* ids, size_t count);
    // One bit an id; `counted` null: every id counts.
    void writeMarks(const uint8_t* counted, size_t count);
    void removePartial();

    std::string path_, partial_;
    uint32_t width_;
    const Tokenizer* tokenizer_;
    int32_t end_token_;
    TokenCacheHeader header_;
    std::ofstream ids_, starts_, marks_;
    std::thread job_;
    std::exception_ptr failure_;
    int64_t written_ids_ = 0;
    int64_t documents_ = 0;
    bool any_uncounted_ = false;
    uint8_t mark_byte_ = 0;  // the marks not yet a whole byte
    bool committed_ = false;
};

}  // namespace trainbench
