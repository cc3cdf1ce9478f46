// Which config changes a checkpoint can follow on resume, and a clear refusal for the others.
#pragma once

#include <string>

#include "trainbench/run_config.h"

namespace trainbench {

// A resumed run continues the checkpoint's weights, optimizer moments and data stream. Anything
// that changes what those mean must equal the checkpoint's config: the whole model section, the
// whole data section, train.seq_len, train.seed, train.loss_normalization, the batch schedule
// (train.batch_policy, batch_ramp_*, batch_adapt_*, lr_batch_rule; under a ramp or an adaptive
// batch also its unit m x W) and the global batch m x K x W (the data cursor is a function of the step
// and these). The learning-rate schedule, step count, micro-batch split,
// logging, evaluation, checkpointing and runtime may change. Throws ConfigError naming the first
// field that differs, both values and the checkpoint.
void requireResumable(const RunConfig& config, const std::string& checkpoint_config_json,
                      const std::string& checkpoint_path);

}  // namespace trainbench
