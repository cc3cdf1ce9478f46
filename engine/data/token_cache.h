// TokenCache: a corpus's documents as token ids in one memory-mapped file, read in place.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "data/mapped_file.h"

namespace trainbench {

// The file (host byte order: the cache is this machine's):
//   a header page: the magic "TBTOKENS3", the sizes below, then the corpus's fingerprint (its
//   files' identity, data/corpus_fingerprint.h) as text;
//   at header_bytes: the ids, `width` bytes each (1, 2 or 4: the narrowest holding the
//   vocabulary), the documents back to back, each ending in its end token;
//   at starts_offset: documents + 1 int64 starts (document d is ids [starts[d], starts[d + 1]));
//   at counted_offset (when marked): one bit per id, 1 where it counts as a target (a prompt's
//   ids do not), least significant bit first.
// A cache is written whole under another name and renamed into place, and its recorded size
// is checked on open, so a reader never sees half of one; a file of the wrong size, magic or
// fingerprint is not a cache (it is built again).
struct TokenCacheHeader {
    uint32_t width = 4;
    bool marked = false;
    int64_t documents = 0;
    int64_t ids = 0;
    int64_t bytes_read = 0;  // the corpus's text bytes tokenised (end bytes not counted)
    int64_t header_bytes = 0;
    int64_t starts_offset = 0;
    int64_t counted_offset = 0;
    int64_t file_size = 0;
    std::string fingerprint;
};

// The narrowest id width in bytes that holds ids below `vocab_size`.
uint32_t tokenIdWidth(int64_t vocab_size);

// The header's bytes for `h` (a whole number of pages), and the section offsets it implies;
// fills h.header_bytes, h.starts_offset, h.counted_offset and h.file_size.
std::string encodeTokenCacheHeader(TokenCacheHeader& h);

class TokenCache {
public:
    // The cache at `path` when it is whole and was built from the corpus `fingerprint` names;
    // nullopt when it is missing, damaged, truncated or stale.
    static std::unique_ptr<TokenCache> open(const std::string& path, const std::string& fingerprint);

    const TokenCacheHeader& header() const { return header_; }
    const std::string& path() const { return file_->path(); }
    int64_t documents() const { return header_.documents; }
    int64_t ids() const { return header_.ids; }

    int64_t id(int64_t i) const {
        const uint8_t* p = ids_ + i * header_.width;
        switch (header_.width) {
        case 1: return p[0];
        case 2: {
            uint16_t v;
            std::memcpy(&v, p, 2);
            return v;
        }
        default: {
            uint32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
        }
    }
    int64_t start(int64_t document) const { return starts_[document]; }
    bool counts(int64_t i) const { return !counted_ || ((counted_[i >> 3] >> (i & 7)) & 1); }
    bool marked() const { return counted_ != nullptr; }
    // The ids in [first, last) that count as targets (every id when none is marked).
    int64_t countedIn(int64_t first, int64_t last) const;
    // The number of documents starting before id `position` (binary search of the starts).
    int64_t documentsStartingBefore(int64_t position) const;
    // The number of documents ending after id `position` (their last id at or after it).
    int64_t documentsEndingAfter(int64_t position) const;

    // Why the mapped file is no longer what was opened (empty while unchanged). A cache built
    // again by another process replaces this one by rename: this mapping stays whole, so that is
    // no change; a truncation in place is.
    std::string changeSinceOpened() const { return file_->changeSinceMapped(/*replaced_is_fine=*/true); }

private:
    TokenCache() = default;
    std::unique_ptr<MappedFile> file_;
    TokenCacheHeader header_;
    const uint8_t* ids_ = nullptr;
    const int64_t* starts_ = nullptr;
    const uint8_t* counted_ = nullptr;
};

}  // namespace trainbench
