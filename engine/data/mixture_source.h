// MixtureSource: several document sources (data.sources) drawn by weight, as one source.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/document_source.h"
#include "data/token_source.h"

namespace trainbench {

// The training stream is unbounded: global sample g lies in cycle g / C at position g % C, and a
// fixed pattern of C positions (smooth weighted round robin over whole-number shares n_i with
// sum C) names its source and its rank among that source's positions in the cycle, so source i
// gives n_i of every C samples, spread evenly, and its own sample number c n_i + rank. That number
// goes through the source's own EpochPermutation (keyed by the run's seed and the source's
// index), so each source is read in epochs of its own: a small source repeats while a large one
// goes on. Every sample is a function of g alone, so ranks, micro-batches and resumed runs need no
// shared state and every split of the batch reads the same windows. C: the smallest cycle up to
// 4,096 in which every share is a whole number (weights 7/2/1 give C = 10), else 65,536 with the
// shares rounded by largest remainder. Validation: the sources' validation parts one after another.
class MixtureSource : public TokenSource {
public:
    MixtureSource(const DataConfig& data, uint64_t seed);

    int64_t vocabSize() const override { return vocab_size_; }
    int64_t sampleCount(Split split, int64_t length) const override;
    int64_t tokenCount(Split split) const override;
    void readSample(Split split, int64_t index, int64_t length, int64_t* out) const override;
    bool hasPromptTokens() const override { return prompts_; }
    void readCounted(Split split, int64_t index, int64_t length, uint8_t* counted) const override;
    std::string fileProblem() const override;

    struct Part {
        std::string name;
        double weight;
        int64_t share;  // n_i: samples per cycle
        std::unique_ptr<DocumentSource> source;
    };
    const std::vector<Part>& parts() const { return parts_; }
    int64_t cycle() const { return static_cast<int64_t>(pattern_.size()); }
    // How many of the first `samples` training samples each part gives (in part order).
    std::vector<int64_t> samplesDrawn(int64_t samples) const;
    std::vector<std::pair<std::string, int64_t>> samplesBySource(int64_t samples) const override;

private:
    struct Place {
        int64_t part;
        int64_t index;  // in the part's split
    };
    Place trainPlace(int64_t g, int64_t length) const;
    Place validationPlace(int64_t index, int64_t length) const;
    Place place(Split split, int64_t index, int64_t length) const;

    std::vector<Part> parts_;
    std::vector<uint16_t> pattern_;  // the part at each position of a cycle
    std::vector<uint32_t> rank_;     // its rank among that part's positions in the cycle
    uint64_t seed_;
    int64_t vocab_size_ = 0;
    bool prompts_ = false;
};

}  // namespace trainbench
