// The noise scale at fixed weights: fresh gradient norms over validation micro-batches.
#include "train/noise_scale_probe.h"

#include <algorithm>
#include <numeric>

#include "data/batch_sampler.h"
#include "data/evaluate.h"
#include "model/compute_precision.h"
#include "train/fresh_gradient_norms.h"
#include "trainbench/config_io.h"
#include "memory/host_to_device.h"

namespace trainbench {

NoiseScaleMeasurement measureNoiseScale(Transformer& model, const TokenSource& source, const RunConfig& config,
                                        torch::Device device, int64_t b) {
    const TrainConfig& t = config.train;
    const int64_t available = source.sampleCount(Split::Validation, t.seq_len + 1);
    int64_t windows = t.eval_windows > 0 ? t.eval_windows : kUnboundedEvalWindows;
    if (available >= 0) windows = t.eval_windows > 0 ? std::min(t.eval_windows, available) : available;
    const int64_t M = windows / std::max<int64_t>(1, b);
    if (M < 2)
        throw ConfigError("train.micro_batch_size",
                          "the noise scale needs two micro-batches or more: the validation part holds " +
                              std::to_string(windows) + " windows of " + std::to_string(t.seq_len + 1) +
                              " tokens, micro-batches of " + std::to_string(b) +
                              "; use a smaller --micro-batch-size, raise data.val_fraction or train.eval_windows");
    const bool was_training = model->is_training();
    model->train();
    std::vector<torch::Tensor> params = model->parameters();
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    std::vector<int> groups = noiseScaleGroupsOf(model);
    NoiseScaleSums sums;
    const ComputePrecision precision = computePrecisionOf(config, model);  // runtime.dtype's
    {
        FreshGradientNorms norms(params, groups, device);
        norms.beginWindow();
        auto tokens = torch::zeros({}, torch::TensorOptions(device).dtype(torch::kInt64));
        for (int64_t k = 0; k < M; ++k) {
            std::vector<int64_t> indices(b);
            std::iota(indices.begin(), indices.end(), k * b);
            MicroBatch batch = readMicroBatch(source, Split::Validation, indices, t.seq_len);
            norms.beginMicroBatch();
            LossParts parts = [&] {
                const ComputeScope scope(device.type(), precision);
                // The main loss's noise scale (the multi-token-prediction modules left out).
                return model->loss(copyToDevice(batch.tokens, device), copyToDevice(batch.targets, device),
                                   /*with_mtp=*/false);
            }();
            (parts.token_loss_sum + parts.aux_loss_sum).backward();
            norms.endMicroBatch(parts.token_count);
            tokens += parts.token_count;
        }
        auto window = norms.windowSums().cpu();
        const int64_t group_count = window.size(0) - 1;
        for (int64_t g = 0; g < group_count; ++g) sums.fresh_sq_per_token += window[g].item<double>();
        sums.micro_batches = static_cast<int64_t>(window[group_count].item<double>());
        sums.tokens = double(tokens.item<int64_t>());
    }
    std::vector<torch::Tensor> grads;
    for (auto& p : params)
        if (p.grad().defined()) grads.push_back(p.grad());
    sums.window_sq = grads.empty() ? 0.0 : torch::stack(at::_foreach_norm(grads, 2)).to(torch::kFloat64).square().sum().item<double>();
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    for (auto& moe : model->moeLayers()) moe->takeLoad();  // not training traffic
    model->train(was_training);

    NoiseScaleMeasurement out;
    out.micro_batches = sums.micro_batches;
    out.micro_batch_size = b;
    out.tokens = static_cast<int64_t>(sums.tokens);
    const auto parts = noiseScaleParts(sums);
    if (!parts)
        throw ConfigError("", "fewer than two validation micro-batches have counted targets: no noise scale");
    out.grad_sq = parts->grad_sq;
    out.trace = parts->trace;
    out.critical_batch_tokens = parts->grad_sq > 0 ? std::max(0.0, parts->trace / parts->grad_sq) : 0.0;
    const double tokens_per_sequence = sums.tokens / double(M * b);
    out.critical_batch_sequences = tokens_per_sequence > 0 ? out.critical_batch_tokens / tokens_per_sequence : 0.0;
    return out;
}

}  // namespace trainbench
