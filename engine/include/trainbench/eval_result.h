// What an evaluation over the validation windows measured (the trainer's eval points,
// `trainbench-cli eval`).
#pragma once

#include <cstdint>

namespace trainbench {

struct EvalResult {
    double loss = 0;     // mean token loss in nats
    int64_t tokens = 0;  // counted target tokens
    int64_t windows = 0;
};

}  // namespace trainbench

// Floor: data/ (engine/README.md)
