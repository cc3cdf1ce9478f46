// The gradient noise scale measured at fixed weights (`trainbench-cli noise-scale`, the
// trainer's probes).
#pragma once

#include <cstdint>

namespace trainbench {

struct NoiseScaleMeasurement {
    double grad_sq = 0;        // |G|^2 of the mean token gradient
    double trace = 0;          // tr(Sigma) per token
    double critical_batch_tokens = 0;     // trace / grad_sq (0 when grad_sq is not positive)
    double critical_batch_sequences = 0;  // the same in sequences of the mean counted length
    int64_t micro_batches = 0;
    int64_t micro_batch_size = 0;
    int64_t tokens = 0;  // counted targets over all micro-batches
};

}  // namespace trainbench

// Floor: train/ (engine/README.md)
