// MarkovSource: a seeded order-k Markov language whose entropy rate (the loss floor) is exact.
#pragma once

#include <vector>

#include "data/token_source.h"

namespace trainbench {

class MarkovSource : public TokenSource {
public:
    // Transition rows ~ Dirichlet(concentration), drawn from `seed`.
    MarkovSource(int64_t vocab_size, int64_t order, double concentration, uint64_t seed);
    // A chain given explicitly: rows[context][next], contexts = vocab^order (for tests).
    MarkovSource(int64_t vocab_size, int64_t order, std::vector<std::vector<double>> rows, uint64_t seed);

    int64_t vocabSize() const override { return vocab_; }
    int64_t sampleCount(Split, int64_t) const override { return -1; }
    void readSample(Split split, int64_t index, int64_t length, int64_t* out) const override;
    double entropyFloor() const override { return entropy_rate_; }

    const std::vector<double>& stationary() const { return stationary_; }
    // Probability of `next` after `context` (context = last `order` tokens as a base-vocab number).
    double transition(int64_t context, int64_t next) const;

private:
    void finish();
    int64_t vocab_, order_, contexts_;
    uint64_t seed_;
    std::vector<double> probs_;       // [contexts, vocab]
    std::vector<double> cdf_;         // [contexts, vocab], cumulative
    std::vector<double> stationary_;  // [contexts]
    std::vector<double> stationary_cdf_;
    double entropy_rate_ = 0;
};

}  // namespace trainbench
