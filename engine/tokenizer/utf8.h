// UTF-8 stepping for the tokenizers: validation, code points, and the repair decode() applies.
#pragma once

#include <cstddef>  // size_t
#include <string>
#include <string_view>

namespace trainbench::utf8 {

// The byte offset of the first ill-formed sequence in `bytes`, or npos when all of it is UTF-8.
size_t firstInvalid(std::string_view bytes);

// The length of the character whose lead byte is `lead`, for text already known to be valid.
inline size_t charLength(unsigned char lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// The code point at `pos` of valid UTF-8 `text`; moves `pos` past it.
char32_t next(std::string_view text, size_t& pos);

// Appends the UTF-8 of `code_point` (a Unicode scalar value).
void append(std::string& out, char32_t code_point);

// `bytes` with each ill-formed subsequence replaced by one U+FFFD per maximal subpart (the
// Unicode-recommended practice, which Rust's from_utf8_lossy and Python's "replace" follow).
std::string repaired(std::string_view bytes);

// Unicode White_Space: what `\s` means to `tokenizers`' lstrip and rstrip.
bool isWhiteSpace(char32_t code_point);

}  // namespace trainbench::utf8
