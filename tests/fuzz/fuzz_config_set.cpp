// Fuzz target: `--set section.key=value` strings, one per line, applied to the default config.
// Every rejection must be a ConfigError; whatever is accepted must validate without throwing.
#include <cstdint>
#include <sstream>
#include <string>

#include "trainbench/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
    trainbench::RunConfig config;
    std::string assignment;
    while (std::getline(lines, assignment)) {
        try {
            trainbench::applyConfigOverride(config, assignment);
        } catch (const trainbench::ConfigError&) {
        }
    }
    (void)trainbench::validateRunConfig(config);
    (void)trainbench::runConfigToJson(config);
    return 0;
}
