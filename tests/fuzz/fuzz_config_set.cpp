// Fuzz target: `--set section.key=value` strings, one per line, applied to the default config.
// Every rejection must be a ConfigError; whatever is accepted must validate without throwing,
// and a config that validates must give its derived counts (batch, tokens, steps, parameters)
// without a wrapped product (UndefinedBehaviorSanitizer ends the run on one).
#include <cstdint>
#include <sstream>
#include <string>

#include "trainbench/config_io.h"
#include "trainbench/param_count.h"

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
    if (trainbench::validateRunConfig(config).empty()) {
        volatile int64_t sink = config.tokensPerStep() + config.optimizerSteps() + config.lastWindowMicroBatches();
        const trainbench::ParamCount count = trainbench::countParameters(config.model);
        sink = sink + count.total + count.activated + count.state_dict_tensors + count.routed_experts;
        (void)sink;
    }
    (void)trainbench::runConfigToJson(config);
    return 0;
}
