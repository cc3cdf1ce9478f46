// Fuzz target: a tokens file (data.source "tokens"). The first byte picks the element type and
// the validation fraction; the rest is the file. Bad files must end in a ConfigError; every
// sample of an accepted file must read without fault, with ids below the vocabulary.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/token_file_source.h"
#include "trainbench/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    static const std::string path = "/tmp/trainbench-fuzz-tokens-" + std::to_string(::getpid()) + ".bin";
    FILE* file = std::fopen(path.c_str(), "wb");
    if (!file) return 0;
    std::fwrite(data + 1, 1, size - 1, file);
    std::fclose(file);

    trainbench::DataConfig config;
    config.source = "tokens";
    config.path = path;
    config.dtype = (data[0] & 1) ? "uint32" : "uint16";
    config.val_fraction = (data[0] >> 1) / 128.0;
    const int64_t vocab = 1 + (data[0] >> 4) * 4096;
    try {
        trainbench::TokenFileSource source(config, vocab);
        for (auto split : {trainbench::Split::Train, trainbench::Split::Validation}) {
            for (int64_t length : {1, 2, 7}) {
                const int64_t samples = source.sampleCount(split, length);
                std::vector<int64_t> out(length);
                for (int64_t i = 0; i < samples && i < 64; ++i) {
                    source.readSample(split, i, length, out.data());
                    for (int64_t id : out)
                        if (id < -1 || id >= vocab) std::abort();
                }
            }
        }
        if (!source.fileProblem().empty()) std::abort();
    } catch (const trainbench::ConfigError&) {
    }
    return 0;
}
