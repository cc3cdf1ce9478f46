// Evaluation: the mean token loss of a model over the validation windows of a source.
#pragma once

#include <torch/torch.h>

#include "data/token_source.h"
#include "model/transformer.h"
#include "trainbench/run_config.h"
#include "trainbench/eval_result.h"

namespace trainbench {

// Windows evaluated when train.eval_windows is 0 ("all") on an unbounded source.
constexpr int64_t kUnboundedEvalWindows = 256;

// Reads validation samples 0, 1, ... (for the finite sources: consecutive non-overlapping windows
// of train.seq_len + 1 tokens from the start of the validation part), train.eval_windows of them
// (0: all), in batches of train.micro_batch_size rows, and returns sum of token losses / sum of
// counted targets. Runs under NoGradGuard in eval mode and puts the model back into its previous
// mode; the expert loads it causes are discarded, so call it between optimizer steps. Throws
// ConfigError when the validation part holds no window.
EvalResult evaluateModel(Transformer& model, const TokenSource& source, const RunConfig& config,
                         torch::Device device);

}  // namespace trainbench
