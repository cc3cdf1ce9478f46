// Checks of a safetensors header against its file; every failure names the file and the entry.
#include "model/safetensors_header.h"

#include <nlohmann/json.hpp>

#include "trainbench/config_io.h"

namespace trainbench {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
    throw ConfigError("", path + ": not a valid safetensors file: " + what +
                              "; the file may be truncated or not written by trainbench (write a new one with "
                              "`trainbench-cli init`)");
}

// A tensor of more elements than this cannot be real; the cap also keeps numel * size exact.
constexpr int64_t kMaxElements = int64_t(1) << 50;

}  // namespace

size_t safetensorsElementSize(const std::string& dtype) {
    struct Size {
        const char* name;
        size_t bytes;
    };
    static constexpr Size kSizes[] = {{"F32", 4}, {"F64", 8}, {"BF16", 2}, {"F16", 2}, {"I64", 8},
                                      {"I32", 4}, {"I16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}};
    for (const auto& s : kSizes)
        if (dtype == s.name) return s.bytes;
    return 0;
}

uint64_t safetensorsHeaderLength(const unsigned char first_bytes[8], uint64_t file_size, const std::string& path) {
    if (file_size < 8) bad(path, "shorter than the 8-byte header length");
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | first_bytes[i];
    if (length > file_size - 8 || length > (uint64_t(100) << 20))
        bad(path, "header length " + std::to_string(length) + " exceeds the file");
    return length;
}

std::vector<SafetensorsEntry> parseSafetensorsHeader(const std::string& header_text, uint64_t data_size,
                                                     const std::string& path) {
    nlohmann::ordered_json header;
    try {
        header = nlohmann::ordered_json::parse(header_text);
    } catch (const nlohmann::json::exception&) {
        bad(path, "the header is not JSON");
    }
    if (!header.is_object()) bad(path, "the header is not a JSON object");
    std::vector<SafetensorsEntry> entries;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") continue;
        const std::string what = "entry '" + name + "'";
        if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
            bad(path, what + " lacks dtype, shape or data_offsets");
        SafetensorsEntry e;
        e.name = name;
        const auto& dtype = entry["dtype"];
        const size_t element_size = dtype.is_string() ? safetensorsElementSize(dtype.get<std::string>()) : 0;
        if (element_size == 0) bad(path, what + " has unsupported dtype " + dtype.dump());
        e.dtype = dtype.get<std::string>();
        const auto& shape = entry["shape"];
        if (!shape.is_array()) bad(path, what + " has a shape that is not a list");
        int64_t numel = 1;
        for (const auto& dim : shape) {
            if (!dim.is_number_integer()) bad(path, what + " has a non-integer shape");
            const int64_t n = dim.get<int64_t>();
            if (n < 0 || (n > 0 && numel > kMaxElements / n)) bad(path, what + " has an invalid shape");
            e.shape.push_back(n);
            numel *= n;
        }
        const auto& offsets = entry["data_offsets"];
        if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
            !offsets[1].is_number_unsigned())
            bad(path, what + " has malformed data_offsets");
        e.begin = offsets[0].get<uint64_t>();
        e.end = offsets[1].get<uint64_t>();
        const uint64_t expected = static_cast<uint64_t>(numel) * element_size;
        if (e.begin > e.end || e.end > data_size || e.end - e.begin != expected)
            bad(path, what + " points outside the data or disagrees with its shape");
        entries.push_back(std::move(e));
    }
    return entries;
}

}  // namespace trainbench
