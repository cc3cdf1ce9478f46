// Evaluation: batched forward passes over validation windows, summed losses and counts.
#include "data/evaluate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "data/batch_sampler.h"
#include "trainbench/config_io.h"
#include "memory/host_to_device.h"
#include "model/compute_precision.h"

namespace trainbench {

EvalResult evaluateModel(Transformer& model, const TokenSource& source, const RunConfig& config,
                         torch::Device device) {
    const TrainConfig& t = config.train;
    const int64_t available = source.sampleCount(Split::Validation, t.seq_len + 1);
    int64_t windows = t.eval_windows > 0 ? t.eval_windows : kUnboundedEvalWindows;
    if (available >= 0) windows = t.eval_windows > 0 ? std::min(t.eval_windows, available) : available;
    if (windows == 0)
        throw ConfigError("data.val_fraction", "the validation part of the data holds no window of train.seq_len + 1 = " +
                                                   std::to_string(t.seq_len + 1) +
                                                   " tokens; raise data.val_fraction, set data.val_path, or lower "
                                                   "train.seq_len");

    torch::NoGradGuard no_grad;
    // runtime.dtype's precision: `eval --set runtime.dtype=fp8` is the fp8 forward's loss.
    const ComputeScope precision(device.type(), computePrecisionOf(config, model));
    const bool was_training = model->is_training();
    model->eval();
    // Summed on the device; the one host synchronisation is at the end.
    auto loss_sum = torch::zeros({}, torch::TensorOptions(device).dtype(torch::kFloat64));
    auto count = torch::zeros({}, torch::TensorOptions(device).dtype(torch::kInt64));
    const int64_t rows = std::max<int64_t>(1, t.micro_batch_size);
    for (int64_t first = 0; first < windows; first += rows) {
        std::vector<int64_t> indices(std::min(rows, windows - first));
        std::iota(indices.begin(), indices.end(), first);
        MicroBatch batch = readMicroBatch(source, Split::Validation, indices, t.seq_len);
        LossParts parts = model->loss(copyToDevice(batch.tokens, device), copyToDevice(batch.targets, device),
                                      /*with_mtp=*/false);  // the main loss only
        loss_sum += parts.token_loss_sum.to(torch::kFloat64);
        count += parts.token_count;
    }
    // Evaluation tokens are not training traffic: they must not move the balancing bias.
    for (auto& moe : model->moeLayers()) moe->takeLoad();
    model->train(was_training);

    EvalResult result;
    result.tokens = count.item<int64_t>();
    result.loss = result.tokens > 0 ? loss_sum.item<double>() / double(result.tokens) : std::nan("");
    result.windows = windows;
    return result;
}

}  // namespace trainbench
