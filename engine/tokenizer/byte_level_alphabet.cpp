// The byte-level alphabet of GPT-2-style BPE (see the header for the rule).
#include "tokenizer/byte_level_alphabet.h"

#include <array>
#include <string>

#include "tokenizer/utf8.h"

namespace trainbench::byte_level {

namespace {

constexpr bool standsForItself(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// The symbols span U+0021..U+0143; one table each way, built once.
constexpr char32_t kHighest = 0x100 + 68;

struct Alphabet {
    std::array<char32_t, 256> code_point{};
    std::array<std::string, 256> utf8;
    std::array<int, kHighest> byte{};

    Alphabet() {
        byte.fill(-1);
        char32_t next_spare = 0x100;
        for (int b = 0; b < 256; ++b) {
            const char32_t cp = standsForItself(b) ? static_cast<char32_t>(b) : next_spare++;
            code_point[b] = cp;
            utf8::append(utf8[b], cp);
            byte[cp] = b;
        }
    }
};

const Alphabet& alphabet() {
    static const Alphabet table;
    return table;
}

}  // namespace

char32_t codePointOf(uint8_t b) { return alphabet().code_point[b]; }

std::string_view symbolOf(uint8_t b) { return alphabet().utf8[b]; }

int byteOf(char32_t cp) { return cp < kHighest ? alphabet().byte[cp] : -1; }

}  // namespace trainbench::byte_level
