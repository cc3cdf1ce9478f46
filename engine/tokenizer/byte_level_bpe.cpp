// ByteLevelBpe: a tokenizer.json read into the pieces that encode it (see the header).
#include "tokenizer/byte_level_bpe.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>  // std::invalid_argument, std::out_of_range
#include <utility>    // std::pair

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/byte_level_alphabet.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex_pattern.h"
#include "tokenizer/utf8.h"

namespace trainbench {

namespace {

using nlohmann::json;

// Document ends, in the order they are preferred when a file has several (a tokenizer with both
// <|endoftext|> and <|im_end|> ends documents with the first).
constexpr const char* kEndOfTextNames[] = {"<|endoftext|>", "<|end_of_text|>", "<｜end▁of▁sentence｜>", "</s>",
                                           "<eos>"};

constexpr const char* kUseSentencePiece =
    "a SentencePiece-style tokenizer ships a tokenizer.model: open that file instead";

// ---------------------------------------------------------------------------------------------
// Reading the JSON, with messages that name the file and the dotted path of the field.

class Reader {
public:
    explicit Reader(const std::string& path) : path_(path) {}

    [[noreturn]] void refuse(const std::string& message) const { throw TokenizerError(path_ + ": " + message); }

    const json& field(const json& object, const char* key, const std::string& where) const {
        if (!object.is_object()) refuse(where + " is " + kindOf(object) + ", not an object");
        const auto found = object.find(key);
        if (found == object.end()) refuse(dotted(where, key) + " is missing; is this a tokenizer.json?");
        return *found;
    }

    std::string text(const json& node, const std::string& where) const {
        if (!node.is_string()) refuse(where + " is " + kindOf(node) + ", not a string");
        return node.get<std::string>();
    }

    std::string type(const json& object, const std::string& where) const {
        return text(field(object, "type", where), dotted(where, "type"));
    }

    // A boolean field; absent or null means `fallback`.
    bool flag(const json& object, const char* key, const std::string& where, bool fallback) const {
        const auto found = object.find(key);
        if (found == object.end() || found->is_null()) return fallback;
        if (!found->is_boolean()) refuse(dotted(where, key) + " is " + kindOf(*found) + ", not true or false");
        return found->get<bool>();
    }

    int32_t id(const json& node, const std::string& where) const {
        if (!node.is_number_integer() || node.get<int64_t>() < 0 ||
            node.get<int64_t>() > std::numeric_limits<int32_t>::max())
            refuse(where + " is " + node.dump() + ", not an id (an integer from 0 to 2^31-1)");
        return static_cast<int32_t>(node.get<int64_t>());
    }

    static std::string dotted(const std::string& where, const std::string& key) {
        return where.empty() ? key : where + "." + key;
    }
    static std::string indexed(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

    static std::string kindOf(const json& node) {
        if (node.is_null()) return "null";
        if (node.is_string()) return "the string " + node.dump();
        if (node.is_array()) return "an array";
        if (node.is_object()) return "an object";
        return node.dump();
    }

private:
    const std::string& path_;
};

// ---------------------------------------------------------------------------------------------
// The sections of a tokenizer.json.

void checkNormalizer(const Reader& r, const json& node, const std::string& where) {
    if (node.is_null()) return;
    const std::string type = r.type(node, where);
    if (type == "NFC") return;  // accepted, not applied: the header says why
    if (type == "Sequence") {
        const std::string list = Reader::dotted(where, "normalizers");
        const json& items = r.field(node, "normalizers", where);
        if (!items.is_array()) r.refuse(list + " is " + Reader::kindOf(items) + ", not an array");
        for (size_t i = 0; i < items.size(); ++i) checkNormalizer(r, items[i], Reader::indexed(list, i));
        return;
    }
    r.refuse(Reader::dotted(where, "type") + " \"" + type +
             "\" is not supported (supported: null, \"NFC\", or a \"Sequence\" of them)" +
             (type == "Replace" || type == "Prepend" || type == "Precompiled" ? "; " + std::string(kUseSentencePiece)
                                                                              : std::string()));
}

SplitBehavior behaviorOf(const Reader& r, const std::string& name, const std::string& where) {
    if (name == "Isolated") return SplitBehavior::Isolated;
    if (name == "Removed") return SplitBehavior::Removed;
    if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (name == "Contiguous") return SplitBehavior::Contiguous;
    r.refuse(where + " \"" + name +
             "\" is not a split behaviour (Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous)");
}

std::shared_ptr<const RegexPattern> splitPattern(const Reader& r, const json& node, const std::string& where) {
    const json& pattern = r.field(node, "pattern", where);
    const std::string at = Reader::dotted(where, "pattern");
    std::string source, field;
    if (pattern.is_object() && pattern.contains("Regex")) {
        field = Reader::dotted(at, "Regex");
        source = r.text(pattern.at("Regex"), field);
    } else if (pattern.is_object() && pattern.contains("String")) {
        field = Reader::dotted(at, "String");
        source = RegexPattern::escaped(r.text(pattern.at("String"), field));
    } else {
        r.refuse(at + " is " + Reader::kindOf(pattern) + ", not {\"Regex\": ...} or {\"String\": ...}");
    }
    try {
        return std::make_shared<RegexPattern>(source);
    } catch (const std::invalid_argument& e) {
        r.refuse(field + " does not compile as a PCRE2 regex: " + e.what());
    }
}

// Appends the steps of `node` to `out`; returns how many ByteLevel steps it held.
int buildPreTokenizer(const Reader& r, const json& node, const std::string& where, PreTokenizer& out) {
    const std::string type = r.type(node, where);
    if (type == "ByteLevel") {
        out.append(makeByteLevelStep(r.flag(node, "add_prefix_space", where, true),
                                     r.flag(node, "use_regex", where, true)));
        return 1;
    }
    if (type == "Split") {
        auto pattern = splitPattern(r, node, where);
        const std::string at = Reader::dotted(where, "behavior");
        const SplitBehavior behavior = behaviorOf(r, r.text(r.field(node, "behavior", where), at), at);
        out.append(makeSplitStep(std::move(pattern), behavior, r.flag(node, "invert", where, false)));
        return 0;
    }
    if (type == "Digits") {
        out.append(makeDigitsStep(r.flag(node, "individual_digits", where, false)));
        return 0;
    }
    if (type == "Sequence") {
        const std::string list = Reader::dotted(where, "pretokenizers");
        const json& items = r.field(node, "pretokenizers", where);
        if (!items.is_array()) r.refuse(list + " is " + Reader::kindOf(items) + ", not an array");
        int byte_level = 0;
        for (size_t i = 0; i < items.size(); ++i)
            byte_level += buildPreTokenizer(r, items[i], Reader::indexed(list, i), out);
        return byte_level;
    }
    r.refuse(Reader::dotted(where, "type") + " \"" + type +
             "\" is not supported (supported: \"ByteLevel\", \"Split\", \"Digits\", \"Sequence\")" +
             (type == "Metaspace" ? "; " + std::string(kUseSentencePiece) : std::string()));
}

void checkDecoder(const Reader& r, const json& node, const std::string& where) {
    if (node.is_null())
        r.refuse(where + " is null; a byte-level BPE needs the \"ByteLevel\" decoder to turn tokens back into text");
    const std::string type = r.type(node, where);
    if (type == "ByteLevel") return;
    if (type == "Sequence") {
        const std::string list = Reader::dotted(where, "decoders");
        const json& items = r.field(node, "decoders", where);
        if (!items.is_array() || items.empty())
            r.refuse(list + " is " + Reader::kindOf(items) + ", not a list of decoders");
        for (size_t i = 0; i < items.size(); ++i) checkDecoder(r, items[i], Reader::indexed(list, i));
        return;
    }
    r.refuse(Reader::dotted(where, "type") + " \"" + type + "\" is not supported (supported: \"ByteLevel\")" +
             (type == "Metaspace" || type == "ByteFallback" || type == "Replace" ? "; " + std::string(kUseSentencePiece)
                                                                                 : std::string()));
}

Vocabulary readVocabulary(const Reader& r, const json& model) {
    const json& vocab = r.field(model, "vocab", "model");
    if (!vocab.is_object()) r.refuse("model.vocab is " + Reader::kindOf(vocab) + ", not an object of token: id");
    Vocabulary out;
    out.reserve(vocab.size());
    for (const auto& [token, id] : vocab.items()) out.emplace(token, r.id(id, "model.vocab[\"" + token + "\"]"));
    return out;
}

std::vector<std::pair<std::string, std::string>> readMerges(const Reader& r, const json& model) {
    const json& merges = r.field(model, "merges", "model");
    if (!merges.is_array()) r.refuse("model.merges is " + Reader::kindOf(merges) + ", not an array");
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        const json& entry = merges[i];
        const std::string where = Reader::indexed("model.merges", i);
        if (entry.is_string()) {
            // The older format: "left right", one space between (byte-level tokens hold none).
            const std::string line = entry.get<std::string>();
            const size_t space = line.find(' ');
            if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
                line.find(' ', space + 1) != std::string::npos)
                r.refuse(where + " is \"" + line + "\", not two tokens separated by one space");
            out.emplace_back(line.substr(0, space), line.substr(space + 1));
        } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
            out.emplace_back(entry[0].get<std::string>(), entry[1].get<std::string>());
        } else {
            r.refuse(where + " is " + Reader::kindOf(entry) + ", not \"left right\" or [\"left\", \"right\"]");
        }
    }
    return out;
}

// The model's settings that change how it encodes, each refused unless it has no effect here.
void checkModelOptions(const Reader& r, const json& model, const Vocabulary& vocab) {
    if (const auto dropout = model.find("dropout"); dropout != model.end() && !dropout->is_null()) {
        if (!dropout->is_number() || dropout->get<double>() != 0.0)
            r.refuse("model.dropout is " + dropout->dump() +
                     "; BPE dropout makes encoding random, set it to null for a data tokenizer");
    }
    if (r.flag(model, "byte_fallback", "model", false))
        r.refuse("model.byte_fallback is true, which a byte-level BPE does not use; " + std::string(kUseSentencePiece));
    for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const auto found = model.find(affix);
        if (found == model.end() || found->is_null() || (found->is_string() && found->get<std::string>().empty()))
            continue;
        r.refuse(std::string("model.") + affix + " is " + found->dump() +
                 "; byte-level BPE files leave it null and this reader does not implement it");
    }
    if (const auto unk = model.find("unk_token"); unk != model.end() && !unk->is_null()) {
        // With every byte symbol in the vocabulary no character is ever unknown, so the unknown
        // token would never be emitted; without them the rule for it would matter.
        for (int b = 0; b < 256; ++b)
            if (!vocab.contains(byte_level::symbolOf(static_cast<uint8_t>(b))))
                r.refuse("model.unk_token is " + unk->dump() +
                         " and the vocabulary lacks byte symbols, so unknown characters would occur; "
                         "this reader implements byte-level BPE with all 256 byte symbols and no unknown token");
    }
}

std::vector<AddedToken> readAddedTokens(const Reader& r, const json& root) {
    std::vector<AddedToken> out;
    const auto list = root.find("added_tokens");
    if (list == root.end() || list->is_null()) return out;
    if (!list->is_array()) r.refuse("added_tokens is " + Reader::kindOf(*list) + ", not an array");
    for (size_t i = 0; i < list->size(); ++i) {
        const json& node = (*list)[i];
        const std::string where = Reader::indexed("added_tokens", i);
        AddedToken t;
        t.id = r.id(r.field(node, "id", where), Reader::dotted(where, "id"));
        t.content = r.text(r.field(node, "content", where), Reader::dotted(where, "content"));
        t.single_word = r.flag(node, "single_word", where, false);
        t.lstrip = r.flag(node, "lstrip", where, false);
        t.rstrip = r.flag(node, "rstrip", where, false);
        t.normalized = r.flag(node, "normalized", where, !r.flag(node, "special", where, false));
        t.special = r.flag(node, "special", where, false);
        if (t.content.empty()) continue;  // `tokenizers` ignores empty ones too
        if (utf8::firstInvalid(t.content) != std::string::npos)
            r.refuse(Reader::dotted(where, "content") + " is not valid UTF-8");
        out.push_back(std::move(t));
    }
    return out;
}

// The bytes a model token stands for: its characters read back through the byte alphabet, or
// the token's own UTF-8 when some character is not a byte symbol (as `tokenizers` decodes).
std::string bytesOfToken(std::string_view token) {
    std::string bytes;
    for (size_t pos = 0; pos < token.size();) {
        const int b = byte_level::byteOf(utf8::next(token, pos));
        if (b < 0) return std::string(token);
        bytes.push_back(static_cast<char>(b));
    }
    return bytes;
}

// ---------------------------------------------------------------------------------------------

class ByteLevelBpe : public Tokenizer {
public:
    ByteLevelBpe(std::string path, BpeModel model, PreTokenizer pre_tokenizer, const std::vector<AddedToken>& added)
        : path_(std::move(path)), model_(std::move(model)), pre_tokenizer_(std::move(pre_tokenizer)),
          raw_added_(selectAdded(added, false)), normalized_added_(selectAdded(added, true)) {
        int64_t highest = -1;
        for (const auto& [token, id] : model_.vocabulary()) highest = std::max<int64_t>(highest, id);
        for (const AddedToken& t : added) highest = std::max<int64_t>(highest, t.id);
        vocab_size_ = highest + 1;
        bytes_by_id_.resize(static_cast<size_t>(vocab_size_));
        known_.assign(static_cast<size_t>(vocab_size_), false);
        for (const auto& [token, id] : model_.vocabulary()) {
            bytes_by_id_[id] = bytesOfToken(token);
            known_[id] = true;
        }
        // An added token decodes to its content, also where it shares an id with a model token.
        for (const AddedToken& t : added) {
            bytes_by_id_[t.id] = t.content;
            known_[t.id] = true;
        }
        for (const char* name : kEndOfTextNames) {
            for (const AddedToken& t : added)
                if (t.content == name) {
                    end_of_text_ = t.id;
                    break;
                }
            if (end_of_text_ >= 0) break;
        }
    }

    std::vector<int32_t> encode(std::string_view text) const override {
        if (const size_t bad = utf8::firstInvalid(text); bad != std::string_view::npos)
            throw TokenizerError(path_ + ": cannot encode text that is not valid UTF-8 (an ill-formed sequence at byte " +
                                 std::to_string(bad) + "); read the text as UTF-8 or repair it first");
        std::vector<Segment> raw, segments;
        if (raw_added_.empty())
            raw.push_back({text, -1});
        else
            raw_added_.split(text, raw);
        for (const Segment& s : raw) {
            // Normalisation would happen here; NFC is taken as already done (see the header).
            if (s.id >= 0 || normalized_added_.empty())
                segments.push_back(s);
            else
                normalized_added_.split(s.text, segments);
        }
        std::vector<int32_t> ids;
        ids.reserve(text.size() / 3 + 1);
        try {
            for (const Segment& s : segments) {
                if (s.id >= 0) {
                    ids.push_back(s.id);
                    continue;
                }
                if (s.text.empty()) continue;
                for (const std::string& piece : pre_tokenizer_.pieces(s.text)) model_.encodePiece(piece, ids);
            }
        } catch (const std::out_of_range& e) {
            throw TokenizerError(path_ + ": cannot encode: " + e.what() +
                                 "; a byte-level vocabulary should hold all 256 byte symbols");
        } catch (const std::runtime_error& e) {
            throw TokenizerError(path_ + ": cannot encode: " + e.what());
        }
        return ids;
    }

    std::string decode(const std::vector<int32_t>& ids) const override {
        std::string bytes;
        for (int32_t id : ids) {
            if (id < 0 || id >= vocab_size_ || !known_[id])
                throw TokenizerError(path_ + ": cannot decode id " + std::to_string(id) +
                                     ": the vocabulary has no such token (its ids run from 0 to " +
                                     std::to_string(vocab_size_ - 1) + ")");
            bytes += bytes_by_id_[id];
        }
        if (utf8::firstInvalid(bytes) == std::string::npos) return bytes;
        return utf8::repaired(bytes);
    }

    int64_t vocabSize() const override { return vocab_size_; }
    int32_t endOfText() const override { return end_of_text_; }
    std::string kind() const override { return "byte-level BPE"; }

private:
    static std::vector<AddedToken> selectAdded(const std::vector<AddedToken>& all, bool normalized) {
        std::vector<AddedToken> out;
        for (const AddedToken& t : all)
            if (t.normalized == normalized) out.push_back(t);
        return out;
    }

    std::string path_;
    BpeModel model_;
    PreTokenizer pre_tokenizer_;
    AddedTokenMatcher raw_added_;         // normalized=false: matched in the raw text
    AddedTokenMatcher normalized_added_;  // normalized=true: matched after normalisation
    int64_t vocab_size_ = 0;
    std::vector<std::string> bytes_by_id_;
    std::vector<bool> known_;
    int32_t end_of_text_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> makeByteLevelBpe(const std::string& path, std::string_view json_text) {
    const Reader r(path);
    json root;
    try {
        root = json::parse(json_text);
    } catch (const json::parse_error& e) {
        r.refuse("not valid JSON (" + std::string(e.what()) + "); a tokenizer.json must be one complete JSON object");
    }
    if (!root.is_object()) r.refuse("is " + Reader::kindOf(root) + ", not a tokenizer.json object");

    const json& model = r.field(root, "model", "");
    if (const std::string type = r.type(model, "model"); type != "BPE")
        r.refuse("model.type is \"" + type + "\"; only \"BPE\" (byte-level, as GPT-2, Llama 3 and Qwen2 ship) is "
                 "supported: use a byte-level BPE tokenizer.json or a SentencePiece .model");

    checkNormalizer(r, root.contains("normalizer") ? root.at("normalizer") : json(), "normalizer");

    PreTokenizer pre_tokenizer;
    const json pre_node = root.contains("pre_tokenizer") ? root.at("pre_tokenizer") : json();
    if (pre_node.is_null() || buildPreTokenizer(r, pre_node, "pre_tokenizer", pre_tokenizer) == 0)
        r.refuse(std::string("pre_tokenizer ") + (pre_node.is_null() ? "is null" : "has no \"ByteLevel\" step") +
                 ": without one the text is not spelled in the byte alphabet, so this is not a byte-level BPE "
                 "(GPT-2 style files have ByteLevel, alone or last in a Sequence)");

    checkDecoder(r, root.contains("decoder") ? root.at("decoder") : json(), "decoder");

    Vocabulary vocab = readVocabulary(r, model);
    checkModelOptions(r, model, vocab);
    const auto merges = readMerges(r, model);
    const bool ignore_merges = r.flag(model, "ignore_merges", "model", false);
    const std::vector<AddedToken> added = readAddedTokens(r, root);

    try {
        BpeModel bpe(std::move(vocab), merges, ignore_merges);
        return std::make_unique<ByteLevelBpe>(path, std::move(bpe), std::move(pre_tokenizer), added);
    } catch (const std::invalid_argument& e) {
        r.refuse(std::string(e.what()) + "; the merges and the vocabulary do not belong together (a damaged or "
                                         "hand-edited file?)");
    }
}

}  // namespace trainbench
