// Markov language: Dirichlet rows, stationary distribution by power iteration, exact entropy rate,
// and samples generated independently from (seed, split, index) with a counter-based generator.
#include "data/markov_source.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "data/sample_rng.h"
#include "trainbench/config_io.h"

namespace trainbench {

MarkovSource::MarkovSource(int64_t vocab, int64_t order, double concentration, uint64_t seed)
    : vocab_(vocab), order_(order), seed_(seed) {
    contexts_ = 1;
    for (int64_t i = 0; i < order; ++i) contexts_ *= vocab;
    probs_.assign(contexts_ * vocab, 0.0);
    std::mt19937_64 engine(seed);
    std::gamma_distribution<double> gamma(concentration, 1.0);
    for (int64_t c = 0; c < contexts_; ++c) {
        double* row = &probs_[c * vocab];
        double total = 0;
        for (int64_t v = 0; v < vocab; ++v) total += row[v] = gamma(engine);
        if (!(total > 0)) {  // every draw underflowed: a deterministic row
            row[c % vocab] = 1.0;
            total = 1.0;
        }
        for (int64_t v = 0; v < vocab; ++v) row[v] /= total;
    }
    finish();
}

MarkovSource::MarkovSource(int64_t vocab, int64_t order, std::vector<std::vector<double>> rows, uint64_t seed)
    : vocab_(vocab), order_(order), seed_(seed) {
    contexts_ = static_cast<int64_t>(rows.size());
    for (const auto& row : rows) probs_.insert(probs_.end(), row.begin(), row.end());
    finish();
}

double MarkovSource::transition(int64_t context, int64_t next) const { return probs_[context * vocab_ + next]; }

void MarkovSource::finish() {
    cdf_.resize(probs_.size());
    for (int64_t c = 0; c < contexts_; ++c) {
        double running = 0;
        for (int64_t v = 0; v < vocab_; ++v) cdf_[c * vocab_ + v] = running += probs_[c * vocab_ + v];
        cdf_[c * vocab_ + vocab_ - 1] = 1.0;
    }
    // Stationary distribution of the context chain. The lazy chain (I + P) / 2 has the same
    // fixed point and is aperiodic, so the iteration converges for any irreducible chain.
    std::vector<double> pi(contexts_, 1.0 / contexts_), next(contexts_);
    for (int iteration = 0; iteration < 100000; ++iteration) {
        std::fill(next.begin(), next.end(), 0.0);
        for (int64_t c = 0; c < contexts_; ++c) {
            next[c] += 0.5 * pi[c];
            const int64_t shifted = (c * vocab_) % contexts_;
            for (int64_t v = 0; v < vocab_; ++v) next[shifted + v] += 0.5 * pi[c] * probs_[c * vocab_ + v];
        }
        double change = 0;
        for (int64_t c = 0; c < contexts_; ++c) change += std::fabs(next[c] - pi[c]);
        pi.swap(next);
        if (change < 1e-14) break;
    }
    stationary_ = pi;
    stationary_cdf_.resize(contexts_);
    double running = 0;
    for (int64_t c = 0; c < contexts_; ++c) stationary_cdf_[c] = running += pi[c];
    stationary_cdf_.back() = 1.0;
    entropy_rate_ = 0;
    for (int64_t c = 0; c < contexts_; ++c) {
        double h = 0;
        for (int64_t v = 0; v < vocab_; ++v) {
            double p = probs_[c * vocab_ + v];
            if (p > 0) h -= p * std::log(p);
        }
        entropy_rate_ += pi[c] * h;
    }
}

void MarkovSource::readSample(Split split, int64_t index, int64_t length, int64_t* out) const {
    SampleRng rng(seed_, split == Split::Train ? 0 : 1, static_cast<uint64_t>(index));
    auto draw = [&](const double* cdf, int64_t n) {
        double u = rng.uniform();
        int64_t i = std::upper_bound(cdf, cdf + n, u) - cdf;
        return std::min(i, n - 1);
    };
    // The first `order` tokens are a context drawn from the stationary distribution, so every
    // position is distributed as in the infinite chain.
    int64_t context = draw(stationary_cdf_.data(), contexts_);
    int64_t produced = 0;
    for (int64_t i = order_ - 1; i >= 0 && produced < length; --i) {
        int64_t divisor = 1;
        for (int64_t j = 0; j < i; ++j) divisor *= vocab_;
        out[produced++] = (context / divisor) % vocab_;
    }
    while (produced < length) {
        int64_t token = draw(&cdf_[context * vocab_], vocab_);
        out[produced++] = token;
        context = (context * vocab_ + token) % contexts_;
    }
}

}  // namespace trainbench
