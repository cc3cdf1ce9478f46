// UTF-8 stepping for the tokenizers: validation, code points, and the repair decode() applies.
#include "tokenizer/utf8.h"

namespace trainbench::utf8 {

namespace {

// How far a well-formed sequence starting at `pos` reaches (well_formed) or, when it is not
// one, the length of its maximal subpart: the longest prefix that could still have begun a
// valid character (at least one byte). The second byte's range depends on the lead byte; that
// is what excludes overlong forms, surrogates and code points past U+10FFFF.
struct Step {
    size_t length;
    bool well_formed;
};

Step stepAt(std::string_view s, size_t pos) {
    const auto lead = static_cast<unsigned char>(s[pos]);
    if (lead < 0x80) return {1, true};
    size_t continuation = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead >= 0xC2 && lead <= 0xDF) {
        continuation = 1;
    } else if (lead == 0xE0) {
        continuation = 2, low = 0xA0;
    } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
        continuation = 2;
    } else if (lead == 0xED) {
        continuation = 2, high = 0x9F;
    } else if (lead == 0xF0) {
        continuation = 3, low = 0x90;
    } else if (lead >= 0xF1 && lead <= 0xF3) {
        continuation = 3;
    } else if (lead == 0xF4) {
        continuation = 3, high = 0x8F;
    } else {
        return {1, false};  // a continuation byte, C0, C1 or F5..FF cannot begin a character
    }
    for (size_t i = 1; i <= continuation; ++i) {
        if (pos + i >= s.size()) return {i, false};
        const auto b = static_cast<unsigned char>(s[pos + i]);
        if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xBF)) return {i, false};
    }
    return {continuation + 1, true};
}

}  // namespace

size_t firstInvalid(std::string_view bytes) {
    size_t pos = 0;
    while (pos < bytes.size()) {
        // ASCII runs dominate real text; skip them without the full step.
        if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
            ++pos;
            continue;
        }
        const Step step = stepAt(bytes, pos);
        if (!step.well_formed) return pos;
        pos += step.length;
    }
    return std::string_view::npos;
}

char32_t next(std::string_view text, size_t& pos) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    const size_t length = charLength(lead);
    char32_t cp = length == 1 ? lead : length == 2 ? (lead & 0x1F) : length == 3 ? (lead & 0x0F) : (lead & 0x07);
    for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
    pos += length;
    return cp;
}

void append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string repaired(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t pos = 0;
    while (pos < bytes.size()) {
        const Step step = stepAt(bytes, pos);
        if (step.well_formed)
            out.append(bytes.substr(pos, step.length));
        else
            out.append("\xEF\xBF\xBD");  // U+FFFD
        pos += step.length;
    }
    return out;
}

bool isWhiteSpace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

}  // namespace trainbench::utf8
