// MixtureSource: the cycle's shares and pattern, and each sample's part and place in it.
#include "data/mixture_source.h"

#include <cmath>
#include <stdexcept>

#include "data/epoch_permutation.h"
#include "data/sample_rng.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace {

constexpr int64_t kExactCycleLimit = 4096;
constexpr int64_t kRoundedCycle = 65536;

// Whole-number shares of a cycle for the weights: exact in the smallest cycle that allows it,
// else rounded in a long one (largest remainders get the leftover positions).
std::vector<int64_t> cycleShares(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    for (int64_t cycle = 1; cycle <= kExactCycleLimit; ++cycle) {
        std::vector<int64_t> shares;
        bool whole = true;
        for (double w : weights) {
            const double share = w / total * double(cycle);
            const double rounded = std::round(share);
            if (rounded < 1 || std::fabs(share - rounded) > 1e-9 * double(cycle)) {
                whole = false;
                break;
            }
            shares.push_back(static_cast<int64_t>(rounded));
        }
        if (whole) return shares;
    }
    std::vector<int64_t> shares;
    std::vector<std::pair<double, size_t>> remainders;
    int64_t given = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
        const double exact = weights[i] / total * double(kRoundedCycle);
        const auto floor = std::max<int64_t>(1, static_cast<int64_t>(std::floor(exact)));
        shares.push_back(floor);
        given += floor;
        remainders.push_back({exact - std::floor(exact), i});
    }
    std::sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (size_t k = 0; given < kRoundedCycle; ++k, ++given) ++shares[remainders[k % remainders.size()].second];
    return shares;
}

}  // namespace

MixtureSource::MixtureSource(const DataConfig& data, uint64_t seed) : seed_(seed) {
    std::vector<double> weights;
    for (size_t i = 0; i < data.sources.size(); ++i) {
        const DataMixtureSource& entry = data.sources[i];
        DataConfig one = data;
        one.sources.clear();
        one.path = entry.path;
        if (!entry.source.empty()) one.source = entry.source;
        if (!entry.text_field.empty()) one.text_field = entry.text_field;
        std::unique_ptr<DocumentSource> source;
        try {
            source = std::make_unique<DocumentSource>(one);
        } catch (const ConfigError& e) {
            // The part's own errors name data.path: say which source it is.
            const std::string at = "data.sources[" + std::to_string(i) + "]";
            const std::string field = e.path() == "data.path" ? at + ".path" : e.path();
            throw ConfigError(field, at + " (\"" + mixtureSourceName(entry) + "\"): " + e.what());
        }
        vocab_size_ = std::max(vocab_size_, source->vocabSize());
        prompts_ = prompts_ || source->hasPromptTokens();
        weights.push_back(entry.weight);
        parts_.push_back({mixtureSourceName(entry), entry.weight, 0, std::move(source)});
    }
    const std::vector<int64_t> shares = cycleShares(weights);
    int64_t cycle = 0;
    for (size_t i = 0; i < parts_.size(); ++i) {
        parts_[i].share = shares[i];
        cycle += shares[i];
    }
    // Smooth weighted round robin: each position goes to the part furthest behind its share.
    std::vector<int64_t> credit(parts_.size(), 0), placed(parts_.size(), 0);
    pattern_.reserve(cycle);
    rank_.reserve(cycle);
    for (int64_t position = 0; position < cycle; ++position) {
        size_t best = 0;
        for (size_t i = 0; i < parts_.size(); ++i) {
            credit[i] += shares[i];
            if (credit[i] > credit[best]) best = i;
        }
        credit[best] -= cycle;
        pattern_.push_back(static_cast<uint16_t>(best));
        rank_.push_back(static_cast<uint32_t>(placed[best]++));
    }
}

int64_t MixtureSource::sampleCount(Split split, int64_t length) const {
    if (split == Split::Train) {
        // Unbounded, but every part must hold a window to be drawn from.
        for (const Part& p : parts_)
            if (p.source->sampleCount(Split::Train, length) == 0) return 0;
        return -1;
    }
    int64_t total = 0;
    for (const Part& p : parts_) total += p.source->sampleCount(Split::Validation, length);
    return total;
}

int64_t MixtureSource::tokenCount(Split split) const {
    int64_t total = 0;
    for (const Part& p : parts_) total += p.source->tokenCount(split);
    return total;
}

MixtureSource::Place MixtureSource::trainPlace(int64_t g, int64_t length) const {
    if (g < 0) throw std::out_of_range("MixtureSource: sample " + std::to_string(g));
    const int64_t cycle = this->cycle();
    const int64_t position = g % cycle;
    const int64_t part = pattern_[position];
    const int64_t drawn = (g / cycle) * parts_[part].share + rank_[position];
    const int64_t count = parts_[part].source->sampleCount(Split::Train, length);
    // Each part its own order: the seed mixed with the part's index.
    const EpochPermutation order(count, SampleRng(seed_, 0x6d6978, static_cast<uint64_t>(part)).next());
    return {part, order(drawn)};
}

MixtureSource::Place MixtureSource::validationPlace(int64_t index, int64_t length) const {
    for (size_t part = 0; part < parts_.size(); ++part) {
        const int64_t count = parts_[part].source->sampleCount(Split::Validation, length);
        if (index < count) return {static_cast<int64_t>(part), index};
        index -= count;
    }
    throw std::out_of_range("MixtureSource: validation sample past the end");
}

MixtureSource::Place MixtureSource::place(Split split, int64_t index, int64_t length) const {
    return split == Split::Train ? trainPlace(index, length) : validationPlace(index, length);
}

void MixtureSource::readSample(Split split, int64_t index, int64_t length, int64_t* out) const {
    const Place p = place(split, index, length);
    parts_[p.part].source->readSample(split, p.index, length, out);
}

void MixtureSource::readCounted(Split split, int64_t index, int64_t length, uint8_t* counted) const {
    const Place p = place(split, index, length);
    // A part without prompts counts every id it holds (its padding excepted), as its own would.
    parts_[p.part].source->readCounted(split, p.index, length, counted);
}

std::string MixtureSource::fileProblem() const {
    for (const Part& p : parts_)
        if (std::string problem = p.source->fileProblem(); !problem.empty()) return problem;
    return {};
}

std::vector<int64_t> MixtureSource::samplesDrawn(int64_t samples) const {
    const int64_t cycle = this->cycle();
    std::vector<int64_t> out;
    for (const Part& p : parts_) out.push_back((samples / cycle) * p.share);
    for (int64_t position = 0; position < samples % cycle; ++position) ++out[pattern_[position]];
    return out;
}

std::vector<std::pair<std::string, int64_t>> MixtureSource::samplesBySource(int64_t samples) const {
    const std::vector<int64_t> drawn = samplesDrawn(samples);
    std::vector<std::pair<std::string, int64_t>> out;
    for (size_t i = 0; i < parts_.size(); ++i) out.emplace_back(parts_[i].name, drawn[i]);
    return out;
}

}  // namespace trainbench
