// BpeModel: a BPE vocabulary and its ranked merges, and the merging of one piece into ids.
//
// Merging is `tokenizers`' algorithm: start from one symbol per character, repeatedly apply the
// lowest-ranked merge present (the leftmost one when a rank occurs twice) and look again at the
// pairs it forms with its neighbours, until no adjacent pair has a merge. With ignore_merges, a
// piece that is itself in the vocabulary is emitted whole first (Llama 3 sets it).
//
// Thread contract: immutable after construction; encodePiece() keeps a per-thread cache of
// merged pieces (one tokenizer's at a time per thread, cleared when full or when another
// BpeModel uses that thread).
#pragma once

#include <cstdint>     // int32_t, uint64_t
#include <functional>  // std::equal_to
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>  // std::pair
#include <vector>

namespace trainbench {

// Lets unordered maps keyed by std::string be searched with a string_view, without a copy.
struct StringViewHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using Vocabulary = std::unordered_map<std::string, int32_t, StringViewHash, std::equal_to<>>;

class BpeModel {
public:
    // Throws std::invalid_argument saying which merge (its index and its two halves) names a
    // token, or makes one, that `vocab` does not have.
    BpeModel(Vocabulary vocab, const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges);

    // Appends the ids of `piece`. A character with no vocabulary entry throws
    // std::out_of_range naming it (cannot happen for byte-level pieces and a full alphabet).
    void encodePiece(std::string_view piece, std::vector<int32_t>& out) const;

    const Vocabulary& vocabulary() const { return vocab_; }
    // The id of `token`, -1 when absent.
    int32_t idOf(std::string_view token) const;

private:
    void merge(std::string_view piece, std::vector<int32_t>& out) const;

    struct Merge {
        uint32_t rank;
        int32_t merged;
    };
    static uint64_t pairKey(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }

    Vocabulary vocab_;
    std::unordered_map<uint64_t, Merge> merges_;
    bool ignore_merges_;
    // The id of each code point below 0x180 that has a one-character entry (the byte alphabet),
    // so the common case skips a hash lookup per character; -1 where none.
    std::vector<int32_t> low_char_ids_;
    uint64_t instance_;  // names this model's entries in the per-thread cache
};

}  // namespace trainbench
