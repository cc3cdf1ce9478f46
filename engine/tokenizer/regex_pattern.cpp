// RegexPattern: PCRE2 behind the Split pre-tokenizers (see the header).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex_pattern.h"

#include <pcre2.h>

#include <cctype>     // std::isalnum
#include <cstdio>     // std::snprintf
#include <stdexcept>  // std::invalid_argument, std::runtime_error

#include "tokenizer/utf8.h"

namespace trainbench {

namespace {

std::string errorText(int code) {
    PCRE2_UCHAR buffer[256];
    const int length = pcre2_get_error_message(code, buffer, sizeof buffer);
    return length < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buffer), length);
}

// One match-data block per thread, big enough for the whole-match offsets (PCRE2 fills as many
// pairs as fit; pair 0 is all we read). Freed when the thread ends.
struct ThreadMatchData {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    ~ThreadMatchData() { pcre2_match_data_free(data); }
};

pcre2_match_data* threadMatchData() {
    thread_local ThreadMatchData block;
    if (!block.data) throw std::runtime_error("PCRE2 could not allocate match data");
    return block.data;
}

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The code unit of a `\uHHHH` escape starting at `at` (the backslash), or -1.
long unicodeEscapeAt(const std::string& pattern, size_t at) {
    if (at + 6 > pattern.size() || pattern[at] != '\\' || pattern[at + 1] != 'u') return -1;
    long value = 0;
    for (size_t i = at + 2; i < at + 6; ++i) {
        const int digit = hexDigit(pattern[i]);
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

}  // namespace

// tokenizer.json patterns are Oniguruma's (Ruby syntax), where `\uHHHH` is a code point; PCRE2
// writes it `\x{HHHH}`. A UTF-16 surrogate pair `\uD83D\uDE00` becomes its one code point. Every
// other escape is copied as it is (an escaped backslash `\\u0041` stays a backslash and "u0041").
std::string RegexPattern::fromOniguruma(const std::string& pattern) {
    std::string out;
    out.reserve(pattern.size());
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '\\' || i + 1 >= pattern.size()) {
            out += pattern[i];
            continue;
        }
        long unit = unicodeEscapeAt(pattern, i);
        if (unit < 0) {
            out += pattern[i];
            out += pattern[++i];
            continue;
        }
        i += 5;
        if (unit >= 0xD800 && unit <= 0xDBFF) {
            const long low = unicodeEscapeAt(pattern, i + 1);
            if (low >= 0xDC00 && low <= 0xDFFF) {
                unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                i += 6;
            }
        }
        char hex[16];
        std::snprintf(hex, sizeof hex, "\\x{%lX}", unit);
        out += hex;
    }
    return out;
}

RegexPattern::RegexPattern(const std::string& oniguruma_pattern) {
    const std::string pattern = fromOniguruma(oniguruma_pattern);
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                          &error, &offset, nullptr);
    if (!code_)
        throw std::invalid_argument(errorText(error) + " (at character offset " + std::to_string(offset) + ")");
    // JIT is an optimisation: where it is missing or fails, the interpreter gives the same matches.
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
}

RegexPattern::~RegexPattern() { pcre2_code_free(code_); }

bool RegexPattern::search(std::string_view subject, size_t start, unsigned options, size_t& begin,
                          size_t& end) const {
    pcre2_match_data* data = threadMatchData();
    // The caller validated the UTF-8 once for the whole text; no check per search.
    options |= PCRE2_NO_UTF_CHECK;
    int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), start, options, data,
                         nullptr);
    // The JIT's default stack is small; a pathological subject may need the interpreter's heap.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), start,
                         options | PCRE2_NO_JIT, data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    if (rc < 0) throw std::runtime_error("regular expression search failed: " + errorText(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    begin = ovector[0];
    end = ovector[1];
    return true;
}

void RegexPattern::findAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const {
    matches.clear();
    size_t from = 0;
    bool matched_before = false;
    size_t last_end = 0;
    while (from <= subject.size()) {
        size_t begin = 0, end = 0;
        if (!search(subject, from, 0, begin, end)) break;
        if (begin == end) {
            // Step one character past an empty match so the search makes progress.
            from = end < subject.size() ? end + utf8::charLength(static_cast<unsigned char>(subject[end]))
                                        : subject.size() + 1;
            if (matched_before && last_end == end) continue;
        } else {
            from = end;
        }
        matched_before = true;
        last_end = end;
        matches.emplace_back(begin, end);
    }
}

bool RegexPattern::matchesAtStart(std::string_view subject) const {
    size_t begin = 0, end = 0;
    return search(subject, 0, PCRE2_ANCHORED, begin, end);
}

std::string RegexPattern::escaped(std::string_view literal) {
    // A backslash before any ASCII punctuation makes it literal in PCRE2; letters, digits and
    // non-ASCII characters are literal already (and a backslash before a letter would not be).
    std::string out;
    for (char c : literal) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80 && !std::isalnum(u) && u > 0x20 && u != 0x7F) out.push_back('\\');
        out.push_back(c);
    }
    return out;
}

}  // namespace trainbench
