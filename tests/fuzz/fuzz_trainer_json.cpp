// Fuzz target: a checkpoint's trainer.json. Bad input must end in a ConfigError; what is
// accepted must carry non-negative counts and two recorded checksums.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "train/trainer_state.h"
#include "trainbench/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::map<std::string, std::string> hashes;
    try {
        const auto state = trainbench::parseTrainerJson(text, "trainer.json", &hashes);
        if (state.step < 0 || state.tokens < 0 || hashes.size() != 2) std::abort();
    } catch (const trainbench::ConfigError&) {
    }
    return 0;
}
