// A byte-level tokenizer.json small enough to check by hand, for the tokenizer and data suites.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QString>

namespace trainbench {

// The GPT-2 byte alphabet, derived here from its definition (printable Latin-1 bytes stand for
// themselves, the rest take U+0100 onwards in byte order), for the hand-written tokenizer.json.
inline QString byteSymbol(int byte) {
    const auto printable = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174); };
    if (printable(byte)) return QString(QChar(byte));
    int n = 0;
    for (int b = 0; b < byte; ++b)
        if (!printable(b)) ++n;
    return QString(QChar(0x100 + n));
}

// A small byte-level tokenizer.json: ids 0-255 are the bytes, then "ab", "Ġab", and
// <|endoftext|> as an added special token.
inline QJsonObject handwrittenTokenizer() {
    QJsonObject vocab;
    for (int b = 0; b < 256; ++b) vocab[byteSymbol(b)] = b;
    vocab["ab"] = 256;
    vocab[byteSymbol(' ') + "ab"] = 257;
    vocab["<|endoftext|>"] = 258;
    QJsonObject model{{"type", "BPE"}, {"dropout", QJsonValue()}, {"unk_token", QJsonValue()},
                      {"continuing_subword_prefix", QJsonValue()}, {"end_of_word_suffix", QJsonValue()},
                      {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", vocab},
                      {"merges", QJsonArray{QJsonArray{"a", "b"}, QJsonArray{byteSymbol(' '), "ab"}}}};
    QJsonObject special{{"id", 258}, {"content", "<|endoftext|>"}, {"single_word", false}, {"lstrip", false},
                        {"rstrip", false}, {"normalized", false}, {"special", true}};
    QJsonObject byte_level{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                           {"use_regex", true}};
    return QJsonObject{{"version", "1.0"}, {"truncation", QJsonValue()}, {"padding", QJsonValue()},
                       {"added_tokens", QJsonArray{special}}, {"normalizer", QJsonValue()},
                       {"pre_tokenizer", byte_level}, {"post_processor", QJsonValue()}, {"decoder", byte_level},
                       {"model", model}};
}

}  // namespace trainbench
