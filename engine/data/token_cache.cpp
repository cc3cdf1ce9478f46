// TokenCache: the header's encoding, and opening a cache file with its checks.
#include "data/token_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>

namespace trainbench {
namespace {

constexpr char kMagic[16] = "TBTOKENS3";
constexpr int64_t kPage = 4096;
// magic, header_bytes, width, marked, documents, ids, bytes_read, starts, counted, size, fingerprint length
constexpr int64_t kFixedBytes = 16 + 8 + 4 + 4 + 8 * 7;

int64_t roundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

template <typename T>
void put(std::string& out, size_t at, T value) {
    std::memcpy(out.data() + at, &value, sizeof value);
}

template <typename T>
T get(const uint8_t* in, size_t at) {
    T value;
    std::memcpy(&value, in + at, sizeof value);
    return value;
}

}  // namespace

uint32_t tokenIdWidth(int64_t vocab_size) {
    if (vocab_size <= (int64_t{1} << 8)) return 1;
    if (vocab_size <= (int64_t{1} << 16)) return 2;
    return 4;
}

std::string encodeTokenCacheHeader(TokenCacheHeader& h) {
    h.header_bytes = roundUp(kFixedBytes + static_cast<int64_t>(h.fingerprint.size()), kPage);
    h.starts_offset = roundUp(h.header_bytes + h.ids * h.width, 8);
    const int64_t starts_end = h.starts_offset + (h.documents + 1) * 8;
    h.counted_offset = h.marked ? starts_end : 0;
    h.file_size = starts_end + (h.marked ? (h.ids + 7) / 8 : 0);
    std::string out(static_cast<size_t>(h.header_bytes), '\0');
    std::memcpy(out.data(), kMagic, sizeof kMagic);
    put<int64_t>(out, 16, h.header_bytes);
    put<uint32_t>(out, 24, h.width);
    put<uint32_t>(out, 28, h.marked ? 1 : 0);
    put<int64_t>(out, 32, h.documents);
    put<int64_t>(out, 40, h.ids);
    put<int64_t>(out, 48, h.bytes_read);
    put<int64_t>(out, 56, h.starts_offset);
    put<int64_t>(out, 64, h.counted_offset);
    put<int64_t>(out, 72, h.file_size);
    put<int64_t>(out, 80, static_cast<int64_t>(h.fingerprint.size()));
    std::memcpy(out.data() + kFixedBytes, h.fingerprint.data(), h.fingerprint.size());
    return out;
}

std::unique_ptr<TokenCache> TokenCache::open(const std::string& path, const std::string& fingerprint) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) return nullptr;
    std::unique_ptr<TokenCache> cache(new TokenCache);
    try {
        cache->file_ = std::make_unique<MappedFile>(path, "token cache");
    } catch (const std::exception&) {
        return nullptr;
    }
    const uint8_t* base = cache->file_->data();
    const auto size = static_cast<int64_t>(cache->file_->size());
    if (size < kFixedBytes || std::memcmp(base, kMagic, sizeof kMagic) != 0) return nullptr;
    TokenCacheHeader& h = cache->header_;
    h.header_bytes = get<int64_t>(base, 16);
    h.width = get<uint32_t>(base, 24);
    const uint32_t marked = get<uint32_t>(base, 28);
    h.marked = marked == 1;
    h.documents = get<int64_t>(base, 32);
    h.ids = get<int64_t>(base, 40);
    h.bytes_read = get<int64_t>(base, 48);
    const auto fingerprint_bytes = get<int64_t>(base, 80);
    if ((h.width != 1 && h.width != 2 && h.width != 4) || marked > 1 || h.documents < 0 || h.ids < 0 ||
        fingerprint_bytes < 0 || kFixedBytes + fingerprint_bytes > std::min(h.header_bytes, size))
        return nullptr;
    h.fingerprint.assign(reinterpret_cast<const char*>(base) + kFixedBytes, static_cast<size_t>(fingerprint_bytes));
    if (h.fingerprint != fingerprint) return nullptr;
    // The offsets follow from the sizes: recompute them and compare, so a header that lies is refused.
    TokenCacheHeader expected = h;
    encodeTokenCacheHeader(expected);
    if (expected.header_bytes != h.header_bytes || expected.starts_offset != get<int64_t>(base, 56) ||
        expected.counted_offset != get<int64_t>(base, 64) || expected.file_size != get<int64_t>(base, 72) ||
        expected.file_size != size)
        return nullptr;
    h = expected;
    cache->ids_ = base + h.header_bytes;
    cache->starts_ = reinterpret_cast<const int64_t*>(base + h.starts_offset);
    cache->counted_ = h.marked ? base + h.counted_offset : nullptr;
    // The ends of the document index: the cheap checks that catch a torn write the size did not.
    if (cache->starts_[0] != 0 || cache->starts_[h.documents] != h.ids) return nullptr;
    return cache;
}

int64_t TokenCache::countedIn(int64_t first, int64_t last) const {
    if (!counted_) return last - first;
    int64_t n = 0;
    int64_t i = first;
    for (; i < last && (i & 7) != 0; ++i) n += counts(i);
    for (; i + 8 <= last; i += 8) n += std::popcount(counted_[i >> 3]);
    for (; i < last; ++i) n += counts(i);
    return n;
}

int64_t TokenCache::documentsStartingBefore(int64_t position) const {
    return std::lower_bound(starts_, starts_ + header_.documents, position) - starts_;
}

int64_t TokenCache::documentsEndingAfter(int64_t position) const {
    const int64_t* ends = starts_ + 1;
    return (ends + header_.documents) - std::upper_bound(ends, ends + header_.documents, position);
}

}  // namespace trainbench
