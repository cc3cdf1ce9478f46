// Fuzz target: a run config file's text. Bad input must end in a ConfigError (any other
// exception escapes and counts as a crash); good input must survive a write/read round trip.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "trainbench/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    trainbench::RunConfig config;
    try {
        config = trainbench::parseRunConfig(text, "fuzz.json");
    } catch (const trainbench::ConfigError&) {
        return 0;
    }
    (void)trainbench::validateRunConfig(config);
    const std::string written = trainbench::runConfigToJson(config);
    const std::string rewritten = trainbench::runConfigToJson(trainbench::parseRunConfig(written, "round trip"));
    if (written != rewritten) std::abort();  // a config must read back as itself
    return 0;
}
