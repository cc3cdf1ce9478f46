// The byte-level alphabet of GPT-2-style BPE: each of the 256 byte values is spelled as one
// printable code point, so a vocabulary of ordinary strings can hold any byte sequence.
//
// Bytes that are printable on their own (! to ~, ¡ to ¬, ® to ÿ) stand for themselves; the other
// 68 (controls, space, DEL, NBSP, soft hyphen, ...) take U+0100, U+0101, ... in byte order, which
// is why a space shows up as "Ġ" (U+0120) and a newline as "Ċ" (U+010A) in vocab files.
#pragma once

#include <cstdint>  // uint8_t
#include <string_view>

namespace trainbench::byte_level {

// The code point that spells `byte`.
char32_t codePointOf(uint8_t byte);
// The UTF-8 of that code point (one or two bytes).
std::string_view symbolOf(uint8_t byte);
// The byte that `code_point` spells, or -1 when it is not one of the 256 symbols.
int byteOf(char32_t code_point);

}  // namespace trainbench::byte_level
