// AddedTokens: the added_tokens of a tokenizer.json (special tokens such as <|endoftext|> and
// any others), found in the text before anything else so that they are never split or merged.
//
// As `tokenizers` does: tokens with normalized=false are looked for in the raw text first, those
// with normalized=true in what is left after normalisation; at each place the leftmost match
// wins, the longest among those starting there. single_word keeps a match only when no word
// character touches it; lstrip and rstrip take the whitespace beside it into the token.
#pragma once

#include <cstdint>  // int32_t
#include <memory>   // std::unique_ptr
#include <string>
#include <string_view>
#include <vector>

namespace trainbench {

class RegexPattern;

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool single_word = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = true;
    bool special = false;
};

// A stretch of text: an added token (its id) or ordinary text (id -1) still to be tokenised.
struct Segment {
    std::string_view text;
    int32_t id = -1;
};

// One pass over text: the tokens of one kind (normalized or not).
class AddedTokenMatcher {
public:
    explicit AddedTokenMatcher(std::vector<AddedToken> tokens);
    ~AddedTokenMatcher();
    bool empty() const { return tokens_.empty(); }
    // Appends the segments of `text`, in order and covering all of it, with no empty ones.
    void split(std::string_view text, std::vector<Segment>& out) const;

private:
    // The longest token starting at `pos`, or nullptr.
    const AddedToken* longestAt(std::string_view text, size_t pos) const;
    bool isWordCharAt(std::string_view text, size_t pos) const;
    bool isWordCharBefore(std::string_view text, size_t pos) const;

    std::vector<AddedToken> tokens_;
    // Indices into tokens_ by first byte, longest content first.
    std::vector<std::vector<size_t>> by_first_byte_;
    std::unique_ptr<RegexPattern> word_char_;  // only when some token is single_word
};

}  // namespace trainbench
