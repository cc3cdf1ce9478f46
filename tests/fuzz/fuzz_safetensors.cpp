// Fuzz target: a safetensors file's bytes, through the header checks the reader relies on.
// Bad input must end in a ConfigError; an accepted entry must lie inside the file.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/safetensors_header.h"
#include "trainbench/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    unsigned char first[8] = {};
    for (size_t i = 0; i < 8 && i < size; ++i) first[i] = data[i];
    try {
        const uint64_t length = trainbench::safetensorsHeaderLength(first, size, "fuzz.safetensors");
        const std::string header(reinterpret_cast<const char*>(data) + 8, length);
        const uint64_t data_size = size - 8 - length;
        for (const auto& entry : trainbench::parseSafetensorsHeader(header, data_size, "fuzz.safetensors"))
            if (entry.begin > entry.end || entry.end > data_size) std::abort();
    } catch (const trainbench::ConfigError&) {
    }
    return 0;
}
