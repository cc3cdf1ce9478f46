// RegexPattern: a PCRE2 pattern (UTF + Unicode properties, JIT-compiled where the platform has
// it) that finds its matches the way `tokenizers` iterates Oniguruma's, for Split pre-tokenizers.
#pragma once

#include <cstddef>  // size_t
#include <string>
#include <string_view>
#include <utility>  // std::pair
#include <vector>

struct pcre2_real_code_8;

namespace trainbench {

class RegexPattern {
public:
    // `pattern` in the syntax tokenizer.json uses (Oniguruma's: `\uHHHH` escapes read as code
    // points). Throws std::invalid_argument with PCRE2's reason and the character offset it
    // points at (in the pattern as PCRE2 reads it: fromOniguruma's).
    explicit RegexPattern(const std::string& pattern);
    ~RegexPattern();
    RegexPattern(const RegexPattern&) = delete;
    RegexPattern& operator=(const RegexPattern&) = delete;

    // The [begin, end) byte ranges of the matches in `subject` (valid UTF-8), left to right and
    // not overlapping. An empty match right where the previous match ended is skipped and the
    // search moves on one character, as Oniguruma's iterator does. Thread-safe: the match
    // buffers are per thread. Throws std::runtime_error when PCRE2 gives up (match limits).
    void findAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const;
    // Whether the pattern matches at the very start of `subject` (anchored there).
    bool matchesAtStart(std::string_view subject) const;

    // The pattern as PCRE2 reads it: `\uHHHH` (and surrogate pairs of them) as `\x{...}`.
    static std::string fromOniguruma(const std::string& pattern);

    // `literal` as a pattern that matches exactly it.
    static std::string escaped(std::string_view literal);

private:
    // Offsets of the first match at or after `start`, false when there is none.
    bool search(std::string_view subject, size_t start, unsigned options, size_t& begin, size_t& end) const;

    pcre2_real_code_8* code_ = nullptr;
};

}  // namespace trainbench
