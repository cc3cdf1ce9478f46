// PreTokenizer: the pre_tokenizer steps of a tokenizer.json (see the header).
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>  // std::reverse
#include <utility>    // std::pair

#include "tokenizer/byte_level_alphabet.h"
#include "tokenizer/regex_pattern.h"

namespace trainbench {

namespace {

// The GPT-2 pre-tokenizer regex ByteLevel applies when use_regex is set: English contractions,
// an optional space then letters, digits or other symbols, and whitespace runs that leave their
// last space to the word after them.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Span {
    size_t begin, end;
    bool match;
};

// The piece cut into match and non-match spans that tile it, in order.
std::vector<Span> tile(const RegexPattern& pattern, std::string_view piece, bool invert) {
    thread_local std::vector<std::pair<size_t, size_t>> matches;
    pattern.findAll(piece, matches);
    std::vector<Span> spans;
    spans.reserve(2 * matches.size() + 1);
    size_t previous = 0;
    for (auto [begin, end] : matches) {
        if (previous != begin) spans.push_back({previous, begin, invert});
        spans.push_back({begin, end, !invert});
        previous = end;
    }
    if (previous != piece.size()) spans.push_back({previous, piece.size(), invert});
    return spans;
}

// The spans a behaviour keeps, joined where it says; what comes back is every kept range.
std::vector<std::pair<size_t, size_t>> arrange(const std::vector<Span>& spans, SplitBehavior behavior) {
    std::vector<std::pair<size_t, size_t>> kept;
    kept.reserve(spans.size());
    switch (behavior) {
        case SplitBehavior::Isolated:
            for (const Span& s : spans) kept.emplace_back(s.begin, s.end);
            break;
        case SplitBehavior::Removed:
            for (const Span& s : spans)
                if (!s.match) kept.emplace_back(s.begin, s.end);
            break;
        case SplitBehavior::Contiguous: {
            // Neighbouring spans of the same kind join (a run of matches becomes one piece).
            bool previous_match = false;
            for (const Span& s : spans) {
                if (s.match == previous_match && !kept.empty())
                    kept.back().second = s.end;
                else
                    kept.emplace_back(s.begin, s.end);
                previous_match = s.match;
            }
            break;
        }
        case SplitBehavior::MergedWithPrevious: {
            // A match joins the piece before it, unless that piece is itself a match.
            bool previous_match = false;
            for (const Span& s : spans) {
                if (s.match && !previous_match && !kept.empty())
                    kept.back().second = s.end;
                else
                    kept.emplace_back(s.begin, s.end);
                previous_match = s.match;
            }
            break;
        }
        case SplitBehavior::MergedWithNext: {
            // The mirror image: walk from the end, a match joins the piece after it.
            bool next_match = false;
            for (auto s = spans.rbegin(); s != spans.rend(); ++s) {
                if (s->match && !next_match && !kept.empty())
                    kept.back().first = s->begin;
                else
                    kept.emplace_back(s->begin, s->end);
                next_match = s->match;
            }
            std::reverse(kept.begin(), kept.end());
            break;
        }
    }
    return kept;
}

class SplitStep : public PreTokenizerStep {
public:
    SplitStep(std::shared_ptr<const RegexPattern> pattern, SplitBehavior behavior, bool invert)
        : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

    void split(std::string_view piece, std::vector<std::string>& out) const override {
        for (auto [begin, end] : arrange(tile(*pattern_, piece, invert_), behavior_))
            out.emplace_back(piece.substr(begin, end - begin));
    }

private:
    std::shared_ptr<const RegexPattern> pattern_;
    SplitBehavior behavior_;
    bool invert_;
};

class ByteLevelStep : public PreTokenizerStep {
public:
    ByteLevelStep(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
        if (use_regex) regex_ = std::make_unique<SplitStep>(std::make_shared<RegexPattern>(kGpt2Pattern),
                                                            SplitBehavior::Isolated, false);
    }

    void split(std::string_view piece, std::vector<std::string>& out) const override {
        std::string spaced;
        if (add_prefix_space_ && (piece.empty() || piece.front() != ' ')) {
            spaced.reserve(piece.size() + 1);
            spaced.push_back(' ');
            spaced.append(piece);
            piece = spaced;
        }
        const size_t first = out.size();
        if (regex_)
            regex_->split(piece, out);
        else
            out.emplace_back(piece);
        for (size_t i = first; i < out.size(); ++i) out[i] = spelled(out[i]);
    }

private:
    static std::string spelled(std::string_view raw) {
        std::string symbols;
        symbols.reserve(raw.size() * 2);
        for (char c : raw) symbols.append(byte_level::symbolOf(static_cast<uint8_t>(c)));
        return symbols;
    }

    bool add_prefix_space_;
    std::unique_ptr<SplitStep> regex_;
};

}  // namespace

std::unique_ptr<PreTokenizerStep> makeSplitStep(std::shared_ptr<const RegexPattern> pattern, SplitBehavior behavior,
                                                bool invert) {
    return std::make_unique<SplitStep>(std::move(pattern), behavior, invert);
}

std::unique_ptr<PreTokenizerStep> makeDigitsStep(bool individual_digits) {
    // One numeric character per match: Isolated leaves each alone, Contiguous joins runs.
    return makeSplitStep(std::make_shared<RegexPattern>(R"(\p{N})"),
                         individual_digits ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false);
}

std::unique_ptr<PreTokenizerStep> makeByteLevelStep(bool add_prefix_space, bool use_regex) {
    return std::make_unique<ByteLevelStep>(add_prefix_space, use_regex);
}

std::vector<std::string> PreTokenizer::pieces(std::string_view text) const {
    std::vector<std::string> current;
    if (!text.empty()) current.emplace_back(text);
    std::vector<std::string> next;
    for (const auto& step : steps_) {
        next.clear();
        for (const std::string& piece : current) step->split(piece, next);
        current.clear();
        for (std::string& piece : next)
            if (!piece.empty()) current.push_back(std::move(piece));
    }
    return current;
}

}  // namespace trainbench
