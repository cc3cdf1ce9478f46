// PreTokenizer: the pre_tokenizer of a tokenizer.json, the steps that cut text into the pieces
// BPE merges within (merges never cross a piece boundary), applied in order as `tokenizers` does.
//
// Steps: Split (a regex or a literal, with any of the five behaviours and invert), Digits, and
// ByteLevel (optional prefix space, the GPT-2 regex, then every piece re-spelled in the byte
// alphabet). A step sees every piece the steps before it left, already re-spelled if a ByteLevel
// came earlier; empty pieces are dropped after each step.
#pragma once

#include <memory>  // std::unique_ptr
#include <string>
#include <string_view>
#include <vector>

namespace trainbench {

class RegexPattern;

// What a Split keeps of the matches and the text between them (`tokenizers`' names).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class PreTokenizerStep {
public:
    virtual ~PreTokenizerStep() = default;
    // Appends the pieces `piece` becomes to `out` (possibly none, possibly empty ones).
    virtual void split(std::string_view piece, std::vector<std::string>& out) const = 0;
};

// Split on `pattern`: matches and the gaps between them, then `behavior` decides what is kept
// and joined. `invert` swaps which parts count as matches.
std::unique_ptr<PreTokenizerStep> makeSplitStep(std::shared_ptr<const RegexPattern> pattern, SplitBehavior behavior,
                                                bool invert);
// Digits: numeric characters (\p{N}) each alone, or runs of them together.
std::unique_ptr<PreTokenizerStep> makeDigitsStep(bool individual_digits);
// ByteLevel: a space in front of a piece that has none (add_prefix_space), the GPT-2 split
// (use_regex), and the byte-alphabet spelling of every piece.
std::unique_ptr<PreTokenizerStep> makeByteLevelStep(bool add_prefix_space, bool use_regex);

class PreTokenizer {
public:
    void append(std::unique_ptr<PreTokenizerStep> step) { steps_.push_back(std::move(step)); }
    bool empty() const { return steps_.empty(); }
    // The pieces of `text` after every step.
    std::vector<std::string> pieces(std::string_view text) const;

private:
    std::vector<std::unique_ptr<PreTokenizerStep>> steps_;
};

}  // namespace trainbench
