// A grid over up to two config fields: every combination of their values becomes one run config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

struct GridAxis {
    std::string field;                // dotted path, e.g. "train.lr"
    std::vector<std::string> values;  // each as `--set` takes it: JSON text or a plain string
};

struct GridPoint {
    RunConfig config;
    // What this point sets, as `key=value` (the key without its section), the grid's fields
    // first, then a batch factor the grid changed to keep the global batch: "lr=3e-4 m=4 K=2"
    // reads as "lr=3e-4 micro_batch_size=4 gradient_accumulation_steps=2".
    std::vector<std::string> settings;
    std::string label() const;
};

// The most points a grid may make: a queue longer than this is a typo more often than a plan.
constexpr int64_t kMaxGridPoints = 64;

// Expands `axes` (one or two) over `base`, the first axis outermost. With `keep_global_batch`
// every point keeps the base config's global batch m*K*W: when the grid changes one batch
// factor (train.micro_batch_size, train.gradient_accumulation_steps or runtime.world_size),
// the accumulation steps follow (the micro-batch size when the grid sets the accumulation
// steps); a grid over train.global_batch_size sets the target instead. Every point must pass
// validateRunConfig. Throws ConfigError naming the field (and the point) on any problem, so a
// grid is queued whole or not at all.
std::vector<GridPoint> expandConfigGrid(const RunConfig& base, const std::vector<GridAxis>& axes,
                                        bool keep_global_batch);

// Splits "1e-3, 3e-4 ,1e-4" (commas or white space) into values; empty pieces are dropped.
std::vector<std::string> splitGridValues(const std::string& text);

// Reads "train.lr=1e-3,3e-3" (the --grid option of both programs). Throws ConfigError when
// the text has no field before an `=`.
GridAxis parseGridAxis(const std::string& text);

}  // namespace trainbench

// Floor: config/ (engine/README.md)
