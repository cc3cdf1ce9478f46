// The safetensors header: what a file claims to hold, checked against the file's size. No
// torch here, so the checks can be fuzzed on their own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainbench {

struct SafetensorsEntry {
    std::string name;
    std::string dtype;  // F32 | F64 | BF16 | F16 | I64 | I32 | I16 | U8 | BOOL | F8_E4M3
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // byte offsets into the data part
};

// Bytes per element of a safetensors dtype name; 0 when the name is not supported.
size_t safetensorsElementSize(const std::string& dtype);

// The header length encoded in a file's first 8 bytes (little-endian), checked against the
// file's size and a 100 MiB cap. Throws ConfigError naming `path`.
uint64_t safetensorsHeaderLength(const unsigned char first_bytes[8], uint64_t file_size, const std::string& path);

// The tensor entries of a header (in file order, `__metadata__` skipped), each checked: a
// supported dtype, a non-negative shape whose byte size matches its offsets, offsets inside
// the `data_size` bytes after the header. Throws ConfigError naming `path` and the entry.
std::vector<SafetensorsEntry> parseSafetensorsHeader(const std::string& header_text, uint64_t data_size,
                                                     const std::string& path);

}  // namespace trainbench
