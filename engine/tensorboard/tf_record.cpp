// TFRecord framing: a table-driven CRC-32C, integers written byte by byte (little-endian on any host).
#include "tensorboard/tf_record.h"

#include <array>

namespace trainbench::tensorboard {
namespace {

// Our own few lines rather than Boost.CRC: Boost's headers (160 MB) are more than the GPU
// machine's carried build dependencies may weigh (bench/gpu-deps.sh), for one table.
// The remainder of each byte value after 8 shifts by 0x82F63B78, 0x1EDC6F41 bit-reversed
// (the CRC is reflected: the lowest bit first).
constexpr std::array<uint32_t, 256> kCrc32cTable = [] {
    std::array<uint32_t, 256> table{};
    for (uint32_t byte = 0; byte < 256; ++byte) {
        uint32_t r = byte;
        for (int bit = 0; bit < 8; ++bit) r = (r >> 1) ^ ((r & 1) ? 0x82F63B78u : 0u);
        table[byte] = r;
    }
    return table;
}();

template <typename Integer>
void appendLittleEndian(std::string& out, Integer value) {
    for (size_t i = 0; i < sizeof(Integer); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
    uint32_t crc = 0xFFFFFFFFu;
    for (const char c : bytes) crc = (crc >> 8) ^ kCrc32cTable[(crc ^ static_cast<uint8_t>(c)) & 0xFF];
    return crc ^ 0xFFFFFFFFu;
}

uint32_t maskedCrc32c(std::string_view bytes) {
    const uint32_t crc = crc32c(bytes);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string frameRecord(std::string_view data) {
    std::string record;
    record.reserve(data.size() + 16);
    appendLittleEndian(record, static_cast<uint64_t>(data.size()));
    appendLittleEndian(record, maskedCrc32c(record));
    record.append(data);
    appendLittleEndian(record, maskedCrc32c(data));
    return record;
}

}  // namespace trainbench::tensorboard
