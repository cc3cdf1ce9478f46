// TokenSource: random access to fixed-length training and validation samples of token ids.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

enum class Split { Train, Validation };

class TokenSource {
public:
    virtual ~TokenSource() = default;
    virtual int64_t vocabSize() const = 0;
    // Samples available in a split for windows of `length` tokens; -1 when unbounded.
    virtual int64_t sampleCount(Split split, int64_t length) const = 0;
    // Tokens stored in a split (end-of-document tokens included); -1 when unbounded.
    virtual int64_t tokenCount(Split) const { return -1; }
    // Writes `length` token ids of sample `index` (a deterministic function of the index).
    // Positions that must not count as targets are written as -1.
    virtual void readSample(Split split, int64_t index, int64_t length, int64_t* out) const = 0;
    // Whether some tokens are inputs only (a prompt's): readCounted then tells them apart.
    virtual bool hasPromptTokens() const { return false; }
    // Writes, for the `length` positions of sample `index`, 1 where the token counts as a target
    // and 0 where it does not (a prompt's token, padding). Called only when hasPromptTokens().
    virtual void readCounted(Split, int64_t, int64_t length, uint8_t* counted) const {
        for (int64_t i = 0; i < length; ++i) counted[i] = 1;
    }
    // The lowest reachable mean loss in nats per token, when known (synthetic sources).
    virtual double entropyFloor() const { return -1.0; }
    // A mixture's sources (data.sources) and how many of the first `samples` training samples
    // each gives, in the config's order; empty for a single source.
    virtual std::vector<std::pair<std::string, int64_t>> samplesBySource(int64_t) const { return {}; }
    // A data file removed or changed since the source opened it, as a sentence naming the file;
    // empty when every file is as it was (or the source has none). Cheap: a stat per file.
    virtual std::string fileProblem() const { return {}; }
};

// Builds the configured source; throws ConfigError naming the data field or file.
std::unique_ptr<TokenSource> openTokenSource(const RunConfig& config);

}  // namespace trainbench
