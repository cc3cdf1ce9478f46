#include "train/step_reporter.h"

#include <cmath>
#include <limits>

#include "trainbench/metric_keys.h"

namespace trainbench {

StepReporter::StepReporter(ReporterSetup setup)
    : setup_(std::move(setup)), critical_batch_(2.0, 0.3, 1000, 10, setup_.warmup_steps) {
    group_present_.assign(noiseScaleGroups().size(), 0);
    for (int g : setup_.group_of_param) group_present_[g] = 1;
    noise_groups_.assign(noiseScaleGroups().size(), NoiseScaleTracker());
}

MetricPoint StepReporter::point(int64_t step, int64_t tokens, const std::string& key, double value) const {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_.started).count();
    return MetricPoint{step, tokens, seconds, key, value};
}

void StepReporter::points(std::vector<MetricPoint> points) {
    if (publishes()) setup_.bus->publish(std::move(points));
}

void StepReporter::event(int64_t step, EventKind kind, const std::string& message) {
    if (!publishes()) return;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_.started).count();
    setup_.bus->publish(RunEvent{step, seconds, eventKindName(kind), message});
}

void StepReporter::observeNoise(const StepFacts& f, const WindowResult& w) {
    if (!w.noise) return;
    if (sequences(f) > 0 && w.tokens > 0) tokens_per_sequence_ = double(w.tokens) / double(sequences(f));
    noise_.observe(*w.noise, double(w.tokens));
    for (size_t g = 0; g < w.noise_groups.size() && g < noise_groups_.size(); ++g)
        if (w.noise_groups[g]) noise_groups_[g].observe(*w.noise_groups[g], double(w.tokens));
}

double StepReporter::criticalBatchSequences() const {
    return noise_.ready() ? noise_.criticalBatchTokens() / tokens_per_sequence_ : std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> StepReporter::noiseState() const {
    if (!noise_.ready()) return {};
    std::vector<double> state = noise_.state();
    for (const auto& group : noise_groups_)
        for (double v : group.state()) state.push_back(v);
    return state;
}

void StepReporter::restoreNoise(const std::vector<double>& state) {
    // Total, then each group: restored only when the layout of groups is the same.
    const size_t each = noise_.state().size();
    if (state.empty() || state.size() != each * (1 + noise_groups_.size())) return;
    noise_.restore({state.begin(), state.begin() + each});
    for (size_t g = 0; g < noise_groups_.size(); ++g)
        noise_groups_[g].restore({state.begin() + each * (g + 1), state.begin() + each * (g + 2)});
}

torch::Tensor StepReporter::hostExpertLoads(const WindowResult& w) {
    if (w.loads.empty()) return {};
    return torch::stack(w.loads).to(torch::kCPU, torch::kFloat64).contiguous();
}

void StepReporter::advise(const StepFacts& f, const torch::Tensor& loads, double loss,
                          const std::vector<int64_t>& rank_received) {
    const int64_t step = f.step;
    if (auto message = spikes_.observe(step, loss)) event(step, EventKind::Advice, *message);
    // An adaptive batch follows the estimate itself: its changes are the batch_change events.
    if (noise_.ready() && !setup_.adaptive_batch) {
        const int64_t per_step = f.micro_batch_size * setup_.world_size;
        if (auto message = critical_batch_.observe(step, noise_.criticalBatchTokens() / tokens_per_sequence_,
                                                   noise_.relativeError(), f.accumulation * per_step, f.accumulation,
                                                   per_step))
            event(step, EventKind::Advice, *message);
    }
    if (loads.defined()) {
        const int64_t experts = loads.size(1);
        for (int64_t i = 0; i < loads.size(0); ++i) {
            const double* row = loads.data_ptr<double>() + i * experts;
            std::vector<double> values(row, row + experts);
            if (auto message = imbalance_.observe(step, setup_.moe_layer_indices[i], values))
                event(step, EventKind::Advice, *message);
        }
    }
    if (!rank_received.empty())
        if (auto message = rank_imbalance_.observe(step, rank_received, setup_.expert_parallel, setup_.n_routed_experts))
            event(step, EventKind::Advice, *message);
    if (!throughput_ && setup_.explored_best && step > setup_.start_step + 1)  // the first step is warm-up
        throughput_.emplace(*setup_.explored_best, f.micro_batch_size);
    if (throughput_)
        if (auto message = throughput_->observe(step, f.tokens_per_s)) event(step, EventKind::Advice, *message);
}

void StepReporter::publishStep(const StepFacts& f, const WindowResult& w, const torch::Tensor& loads) {
    if (!publishes()) return;
    const int64_t step = f.step;
    auto at = [&](const std::string& key, double value) { return point(step, f.tokens, key, value); };
    std::vector<MetricPoint> points = {
        at(metric::kLoss, w.loss_sum / double(w.tokens)),
        at(metric::kGradNorm, w.grad_norm),
        at(metric::kLearningRate, f.lr),
        at(metric::kTokens, double(f.tokens)),
        at(metric::kTokensPerSecond, f.tokens_per_s),
        at(metric::kStepTime, f.step_time),
        at(metric::kCollectives, double(w.collectives)),
        at(metric::kGlobalBatch, double(sequences(f))),
    };
    if (!w.loads.empty()) points.push_back(at(metric::kAuxLoss, w.aux_loss_sum / double(w.tokens)));
    for (size_t k = 0; k < w.mtp_loss_sums.size(); ++k)
        if (w.mtp_tokens[k] > 0)
            points.push_back(at(metric::mtpLossKey(static_cast<int64_t>(k) + 1), w.mtp_loss_sums[k] / double(w.mtp_tokens[k])));
    if (!w.mtp_loss_sums.empty()) points.push_back(at(metric::kMtpWeight, w.mtp_weight));
    if (setup_.offload_files) {
        points.push_back(at(metric::kOffloadReadBytes, double(w.offload_read_bytes)));
        points.push_back(at(metric::kOffloadWriteBytes, double(w.offload_written_bytes)));
        if (f.step_time > 0) {
            points.push_back(at(metric::kOffloadReadRate, double(w.offload_read_bytes) / f.step_time / 1e9));
            points.push_back(at(metric::kOffloadWriteRate, double(w.offload_written_bytes) / f.step_time / 1e9));
        }
    }
    if (setup_.host_link) {
        points.push_back(at(metric::kHostToDeviceBytes, double(w.to_device_bytes)));
        points.push_back(at(metric::kDeviceToHostBytes, double(w.to_host_bytes)));
    }
    if (setup_.sharded_weights) points.push_back(at(metric::kShardGatheredBytes, double(w.shard_gathered_bytes)));
    if (setup_.samples_by_source)
        for (const auto& [source, samples] : setup_.samples_by_source(f.samples_end))
            points.push_back(at(metric::dataSourceTokensKey(source), double(samples * setup_.seq_len)));
    if (w.noise && noise_.ready()) {
        // Raw parts (a user may smooth them differently), their averages, and the critical batch
        // from the ratio of the averages, in tokens and in sequences of this window.
        const double critical = noise_.criticalBatchTokens();
        points.push_back(at(metric::kNoiseGradSq, w.noise->grad_sq));
        points.push_back(at(metric::kNoiseTrace, w.noise->trace));
        points.push_back(at(metric::kNoiseGradSqAverage, noise_.gradSq()));
        points.push_back(at(metric::kNoiseTraceAverage, noise_.trace()));
        points.push_back(at(metric::kCriticalBatchTokens, critical));
        points.push_back(at(metric::kCriticalBatchSequences, critical / tokens_per_sequence_));
        const double error = noise_.relativeError();
        if (std::isfinite(error)) points.push_back(at(metric::kCriticalBatchRelativeError, error));
        for (size_t g = 0; g < w.noise_groups.size(); ++g) {
            if (!group_present_[g] || !w.noise_groups[g]) continue;
            const std::string& group = noiseScaleGroups()[g];
            points.push_back(at(metric::noiseGroupKey(group, "grad_sq"), w.noise_groups[g]->grad_sq));
            points.push_back(at(metric::noiseGroupKey(group, "trace"), w.noise_groups[g]->trace));
            if (noise_groups_[g].ready())
                points.push_back(at(metric::noiseGroupKey(group, "critical_batch_tokens"), noise_groups_[g].criticalBatchTokens()));
        }
    }
    // Expert parallelism: the time in the exchanges and the routed rows each rank received.
    if (setup_.expert_group) {
        const double seconds = setup_.expert_group->allToAllSeconds();
        points.push_back(at(metric::kAllToAllTime, seconds - all_to_all_seconds_));
        all_to_all_seconds_ = seconds;
    }
    for (size_t r = 0; r < w.rank_received.size(); ++r)
        points.push_back(at(metric::rankReceivedKey(int(r)), double(w.rank_received[r])));
    // Each rank's most bytes held during the window's forward and backward passes.
    for (size_t r = 0; r < w.rank_peak_bytes.size(); ++r)
        if (w.rank_peak_bytes[r] > 0)
            points.push_back(at(metric::memoryKey(setup_.device, int(r), metric::kPeakBytes), double(w.rank_peak_bytes[r])));
    if (loads.defined()) {
        // The tokens of each expert feed the GUI's heatmap: every step while that is at most
        // kExpertPointsPerStep points, else every few steps, so a 58 x 256 model does not write
        // 15k rows per step.
        constexpr int64_t kExpertPointsPerStep = 512;
        const int64_t layers = loads.size(0), experts = loads.size(1);
        const int64_t every = (layers * experts + kExpertPointsPerStep - 1) / kExpertPointsPerStep;
        const bool per_expert = step % every == 0;
        const double* values = loads.data_ptr<double>();
        for (int64_t i = 0; i < layers; ++i) {
            const int layer = static_cast<int>(setup_.moe_layer_indices[i]);
            const double* row = values + i * experts;
            double sum = 0, max = 0;
            for (int64_t e = 0; e < experts; ++e) sum += row[e], max = std::max(max, row[e]);
            const double mean = sum / double(experts);
            points.push_back(at(metric::loadMaxOverMeanKey(layer), mean > 0 ? max / mean : 0.0));
            if (per_expert)
                for (int64_t e = 0; e < experts; ++e) points.push_back(at(metric::expertTokensKey(layer, int(e)), row[e]));
        }
    }
    this->points(std::move(points));
}

}  // namespace trainbench
