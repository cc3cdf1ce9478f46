// The noise scale at fixed weights: the critical batch of a model (a checkpoint) measured over
// its config's validation windows, for `noise-scale` and the GUI.
#pragma once

#include <torch/torch.h>

#include "data/token_source.h"
#include "model/transformer.h"
#include "trainbench/noise_scale.h"
#include "trainbench/run_config.h"
#include "trainbench/noise_scale_measurement.h"

namespace trainbench {

// Validation windows 0, 1, ... (train.eval_windows of them, 0: all, as the evaluation reads
// them) in micro-batches of `micro_batch_size` sequences, a partial last one dropped: each
// micro-batch's backward of its token-loss sum (and balance loss) in training mode, its own
// gradient squared (FreshGradientNorms), the window's summed gradient squared once at the end;
// then the estimates of noiseScaleParts over those M micro-batches. The weights are not
// changed; the expert loads are discarded. Throws ConfigError when fewer than two micro-batches
// fit the validation part.
NoiseScaleMeasurement measureNoiseScale(Transformer& model, const TokenSource& source, const RunConfig& config,
                                        torch::Device device, int64_t micro_batch_size);

}  // namespace trainbench
