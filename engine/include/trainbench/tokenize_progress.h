// The progress of tokenising a text corpus (the text source with data.tokenizer), for a bar.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace trainbench {

// Called from the tokenising thread about every 200 ms and once at the end (done == total),
// with the corpus bytes tokenised so far. `what` names the corpus ("data.path (\"...\")").
// Nothing is called for a corpus found in the token cache.
using TokenizeProgress = std::function<void(const std::string& what, int64_t done_bytes, int64_t total_bytes)>;

// Installs the process's one progress callback (empty: none). Thread-safe.
void setTokenizeProgress(TokenizeProgress progress);

// Where tokenised corpora are cached: TRAINBENCH_TOKEN_CACHE, else token-cache/ in the run store's
// folder (TRAINBENCH_STORE or the XDG data folder).
std::string tokenCacheFolder();

}  // namespace trainbench

// Floor: data/ (engine/README.md)
