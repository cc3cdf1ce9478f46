// CorpusCache: a document source's files (data.path or data.val_path) as a token cache, built
// once by a streaming pass and memory-mapped after.
#pragma once

#include <memory>
#include <string>

#include "data/token_cache.h"
#include "tokenizer/tokenizer.h"
#include "trainbench/run_config.h"

namespace trainbench {

// How the documents become ids: bytes (no tokenizer) or a tokenizer and its end-of-text token.
struct CorpusTokens {
    const Tokenizer* tokenizer = nullptr;
    std::string tokenizer_hash;  // the tokenizer file's SHA-256
    int32_t end_token = 0;
    int64_t vocab_size = 256;
};

struct CachedCorpus {
    std::unique_ptr<TokenCache> cache;
    bool built = false;  // false: an existing cache was reused
};

// The cache of `path` (named by `field` in errors) in tokenCacheFolder(), reused when its
// fingerprint (data/corpus_fingerprint.h) matches the files now, else built: the files streamed
// through the data.source's reader in chunks, tokenised on every core while the next chunk is
// read, written under a temporary name and renamed into place. One process builds a given cache
// at a time (an advisory lock on "<key>.lock" beside it): the others wait, with a message, then
// reuse it. Memory while building: two chunks of about 8 MiB of text and their ids (plus the
// largest document, with a tokenizer, which sees documents whole). Throws ConfigError naming
// the field (bad files, bad records, no text) or telling how to make the cache writable.
CachedCorpus cacheCorpus(const DataConfig& data, const std::string& path, const std::string& field,
                         const CorpusTokens& tokens);

}  // namespace trainbench
