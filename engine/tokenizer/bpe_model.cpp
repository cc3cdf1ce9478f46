// BpeModel: ranked merges over one piece (see the header).
#include "tokenizer/bpe_model.h"

#include <atomic>
#include <queue>
#include <stdexcept>  // std::invalid_argument, std::out_of_range

#include "tokenizer/utf8.h"

namespace trainbench {

namespace {

constexpr char32_t kLowChars = 0x180;
// Pieces longer than this are merged afresh each time (long pieces rarely repeat).
constexpr size_t kCacheableLength = 256;
constexpr size_t kCacheCapacity = size_t{1} << 16;

std::atomic<uint64_t> next_instance{1};

struct PieceCache {
    uint64_t owner = 0;
    std::unordered_map<std::string, std::vector<int32_t>, StringViewHash, std::equal_to<>> ids;
};

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

BpeModel::BpeModel(Vocabulary vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                   bool ignore_merges)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges), low_char_ids_(kLowChars, -1),
      instance_(next_instance.fetch_add(1)) {
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [left, right] = merges[rank];
        const auto name = [&] {
            return "model.merges[" + std::to_string(rank) + "] (" + quoted(left) + " " + quoted(right) + ")";
        };
        const int32_t left_id = idOf(left), right_id = idOf(right);
        if (left_id < 0) throw std::invalid_argument(name() + " names " + quoted(left) + ", which is not in model.vocab");
        if (right_id < 0) throw std::invalid_argument(name() + " names " + quoted(right) + ", which is not in model.vocab");
        const int32_t merged = idOf(left + right);
        if (merged < 0)
            throw std::invalid_argument(name() + " makes " + quoted(left + right) + ", which is not in model.vocab");
        // A pair listed twice keeps its later rank, as `tokenizers` does.
        merges_[pairKey(left_id, right_id)] = Merge{static_cast<uint32_t>(rank), merged};
    }
    for (const auto& [token, id] : vocab_) {
        size_t pos = 0;
        if (token.empty()) continue;
        const char32_t cp = utf8::next(token, pos);
        if (pos == token.size() && cp < kLowChars) low_char_ids_[cp] = id;
    }
}

int32_t BpeModel::idOf(std::string_view token) const {
    const auto found = vocab_.find(token);
    return found == vocab_.end() ? -1 : found->second;
}

void BpeModel::encodePiece(std::string_view piece, std::vector<int32_t>& out) const {
    if (piece.empty()) return;
    if (ignore_merges_) {
        if (const int32_t whole = idOf(piece); whole >= 0) {
            out.push_back(whole);
            return;
        }
    }
    if (piece.size() > kCacheableLength) {
        merge(piece, out);
        return;
    }
    thread_local PieceCache cache;
    if (cache.owner != instance_) {
        cache.ids.clear();
        cache.owner = instance_;
    }
    if (const auto hit = cache.ids.find(piece); hit != cache.ids.end()) {
        out.insert(out.end(), hit->second.begin(), hit->second.end());
        return;
    }
    std::vector<int32_t> ids;
    merge(piece, ids);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cache.ids.size() >= kCacheCapacity) cache.ids.clear();
    cache.ids.emplace(std::string(piece), std::move(ids));
}

void BpeModel::merge(std::string_view piece, std::vector<int32_t>& out) const {
    // The piece as a doubly linked list of symbols; a merged-away symbol gets id -1.
    struct Symbol {
        int32_t id;
        int32_t prev, next;
    };
    std::vector<Symbol> symbols;
    symbols.reserve(piece.size());
    for (size_t pos = 0; pos < piece.size();) {
        const size_t start = pos;
        const char32_t cp = utf8::next(piece, pos);
        int32_t id = cp < kLowChars ? low_char_ids_[cp] : -1;
        if (id < 0) id = idOf(piece.substr(start, pos - start));
        if (id < 0)
            throw std::out_of_range("the character " + quoted(piece.substr(start, pos - start)) +
                                    " has no entry in model.vocab");
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back({id, index - 1, index + 1});
    }
    symbols.back().next = -1;

    // Candidate merges, lowest rank first and leftmost among equal ranks. Entries go stale when
    // a neighbour merges; each is checked against the symbols as they are when it comes up.
    struct Candidate {
        uint32_t rank;
        int32_t pos;
        int32_t merged;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    const auto consider = [&](int32_t left) {
        const int32_t right = symbols[left].next;
        if (right < 0) return;
        if (const auto m = merges_.find(pairKey(symbols[left].id, symbols[right].id)); m != merges_.end())
            queue.push({m->second.rank, left, m->second.merged});
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);

    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& left = symbols[top.pos];
        if (left.id < 0 || left.next < 0) continue;
        Symbol& right = symbols[left.next];
        // Stale unless this pair still merges into the same token.
        const auto m = merges_.find(pairKey(left.id, right.id));
        if (m == merges_.end() || m->second.merged != top.merged) continue;
        left.id = top.merged;
        right.id = -1;
        left.next = right.next;
        if (left.next >= 0) symbols[left.next].prev = top.pos;
        if (left.prev >= 0) consider(left.prev);
        consider(top.pos);
    }
    for (const Symbol& s : symbols)
        if (s.id >= 0) out.push_back(s.id);
}

}  // namespace trainbench
