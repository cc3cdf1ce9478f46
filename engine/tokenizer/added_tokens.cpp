// AddedTokens: finding special and added tokens in text (see the header).
#include "tokenizer/added_tokens.h"

#include <algorithm>  // std::stable_sort, std::max

#include "tokenizer/regex_pattern.h"
#include "tokenizer/utf8.h"

namespace trainbench {

namespace {

// A word character as `tokenizers`' single_word check means it (Rust's Unicode \w).
constexpr const char* kWordChar = R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])";

// The start of the character that ends before `pos` (valid UTF-8, pos > 0).
size_t charStartBefore(std::string_view text, size_t pos) {
    size_t start = pos - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    return start;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)), by_first_byte_(256) {
    bool any_single_word = false;
    for (size_t i = 0; i < tokens_.size(); ++i) {
        by_first_byte_[static_cast<unsigned char>(tokens_[i].content.front())].push_back(i);
        any_single_word = any_single_word || tokens_[i].single_word;
    }
    for (auto& bucket : by_first_byte_)
        std::stable_sort(bucket.begin(), bucket.end(),
                         [&](size_t a, size_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
    if (any_single_word) word_char_ = std::make_unique<RegexPattern>(kWordChar);
}

AddedTokenMatcher::~AddedTokenMatcher() = default;

const AddedToken* AddedTokenMatcher::longestAt(std::string_view text, size_t pos) const {
    for (size_t i : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
        const std::string& content = tokens_[i].content;
        if (text.compare(pos, content.size(), content) == 0) return &tokens_[i];
    }
    return nullptr;
}

bool AddedTokenMatcher::isWordCharAt(std::string_view text, size_t pos) const {
    return word_char_->matchesAtStart(text.substr(pos));
}

bool AddedTokenMatcher::isWordCharBefore(std::string_view text, size_t pos) const {
    return word_char_->matchesAtStart(text.substr(charStartBefore(text, pos), pos));
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
    size_t taken = 0;  // text before this is in `out` already
    size_t pos = 0;
    while (pos < text.size()) {
        const AddedToken* token = longestAt(text, pos);
        if (!token) {
            ++pos;
            continue;
        }
        size_t begin = pos, end = pos + token->content.size();
        // The next search starts after the match itself, whether or not it is kept or stripped.
        pos = end;
        if (token->single_word) {
            const bool alone_left = begin == 0 || !isWordCharBefore(text, begin);
            const bool alone_right = end == text.size() || !isWordCharAt(text, end);
            if (!alone_left || !alone_right) continue;
        }
        if (token->lstrip) {
            size_t start = begin;
            while (start > taken) {
                size_t before = charStartBefore(text, start), at = before;
                if (!utf8::isWhiteSpace(utf8::next(text, at))) break;
                start = before;
            }
            begin = std::max(start, taken);
        }
        if (token->rstrip) {
            while (end < text.size()) {
                size_t after = end;
                if (!utf8::isWhiteSpace(utf8::next(text, after))) break;
                end = after;
            }
        }
        if (taken < begin) out.push_back({text.substr(taken, begin - taken), -1});
        out.push_back({text.substr(begin, end - begin), token->id});
        taken = end;
        pos = std::max(pos, end);
    }
    if (taken < text.size()) out.push_back({text.substr(taken), -1});
}

}  // namespace trainbench
