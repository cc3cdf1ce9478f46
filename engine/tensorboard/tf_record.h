// TFRecord framing, the container of TensorBoard's event files: each record is its length, a
// checksum of the length, the bytes, and a checksum of the bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainbench::tensorboard {

// CRC-32C (Castagnoli: polynomial 0x1EDC6F41, reflected, initial value and final XOR 0xFFFFFFFF).
uint32_t crc32c(std::string_view bytes);
// The checksum as TFRecord stores it: rotated right by 15 bits plus a constant, so that a CRC
// over data that itself holds CRCs does not degenerate.
uint32_t maskedCrc32c(std::string_view bytes);

// One record: uint64 length, uint32 masked CRC-32C of those 8 bytes, the data, uint32 masked
// CRC-32C of the data; every integer little-endian.
std::string frameRecord(std::string_view data);

}  // namespace trainbench::tensorboard
