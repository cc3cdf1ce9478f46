// StepReporter: what a run tells the world after each step: rank 0's metric points and events,
// the live-advice detectors, and the noise-scale trackers (kept alike on every rank, since an
// adaptive batch grows on what they say). It reads plain window results; the trainer owns the
// loop and hands it what happened.
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "comm/collectives.h"
#include "train/fresh_gradient_norms.h"
#include "train/window_statistics.h"
#include "trainbench/event_kind.h"
#include "trainbench/live_advice.h"
#include "trainbench/metric_bus.h"
#include "trainbench/noise_scale.h"

namespace trainbench {

struct ReporterSetup {
    MetricBus* bus = nullptr;  // rank 0 publishes; null: nothing published
    int rank = 0;
    int world_size = 1;
    std::string device = "cpu";  // names the memory keys
    std::chrono::steady_clock::time_point started;
    std::optional<ExploredBest> explored_best;  // see SessionOptions
    std::vector<int64_t> moe_layer_indices;     // the model's MoE layers, by block index
    std::vector<int> group_of_param;            // each parameter's noise-scale group
    // Expert parallelism: the expert group (its exchange time is reported), the EP size and E.
    Collectives* expert_group = nullptr;
    int64_t expert_parallel = 1;
    int64_t n_routed_experts = 0;
    // train.batch_policy adaptive: the batch follows the estimate, so no critical-batch advice.
    bool adaptive_batch = false;
    int64_t start_step = 0;
    // The critical-batch advice waits for the learning-rate warm-up to end (its estimate moves
    // most there): train.warmup_steps.
    int64_t warmup_steps = 0;
    // runtime.offload_dir: the files' traffic is reported (io/*).
    bool offload_files = false;
    bool sharded_weights = false;  // ZeRO stage 3: the shards' gathered bytes are reported
    bool host_link = false;        // the host step, or boundaries in host memory: io/to_*_bytes reported
    // A mixture's sources: the training samples among the first n each gives (data/*/tokens);
    // empty for a single source.
    std::function<std::vector<std::pair<std::string, int64_t>>(int64_t)> samples_by_source;
    int64_t seq_len = 0;
};

// The step just taken, as the report needs it.
struct StepFacts {
    int64_t step = 0;    // steps done (1-based)
    int64_t tokens = 0;  // counted target tokens since step 0
    double lr = 0;
    double tokens_per_s = 0;
    double step_time = 0;
    // The split of the step just taken (a ramp's, not the final one): m and K (W is the setup's).
    int64_t micro_batch_size = 0;
    int64_t accumulation = 0;
    int64_t samples_end = 0;  // the global samples the steps so far read
};

class StepReporter {
public:
    explicit StepReporter(ReporterSetup setup);

    void event(int64_t step, EventKind kind, const std::string& message);
    void points(std::vector<MetricPoint> points);
    MetricPoint point(int64_t step, int64_t tokens, const std::string& key, double value) const;

    // Every rank, after each completed step: the noise scale smoothed over the run.
    void observeNoise(const StepFacts& step, const WindowResult& window);
    // The smoothed critical batch in sequences; NaN before the estimate is ready.
    double criticalBatchSequences() const;
    // The trackers' state for a checkpoint (total, then each group; empty before ready), and back.
    std::vector<double> noiseState() const;
    void restoreNoise(const std::vector<double>& state);

    // Rank 0: the step's metric points (`loads`: hostExpertLoads, undefined without MoE).
    void publishStep(const StepFacts& step, const WindowResult& window, const torch::Tensor& loads);
    // Rank 0: the live-advice detectors see every completed step.
    void advise(const StepFacts& step, const torch::Tensor& loads, double loss, const std::vector<int64_t>& rank_received);

    // The window's tokens per expert as one fp64 CPU tensor [MoE layers, experts] (one copy to
    // the host for every layer); undefined without MoE layers.
    static torch::Tensor hostExpertLoads(const WindowResult& window);

private:
    bool publishes() const { return setup_.bus && setup_.rank == 0; }
    // The global batch of the step just taken, in sequences: m x K x W.
    int64_t sequences(const StepFacts& f) const { return f.micro_batch_size * f.accumulation * setup_.world_size; }

    ReporterSetup setup_;
    NoiseScaleTracker noise_;
    std::vector<NoiseScaleTracker> noise_groups_;
    std::vector<char> group_present_;  // per noise-scale group: some parameter is in it
    double tokens_per_sequence_ = 1;   // counted targets per sequence in the last estimated window
    double all_to_all_seconds_ = 0;    // the exchange time up to the last published step
    LossSpikeDetector spikes_;
    CriticalBatchAdvisor critical_batch_;
    RankImbalanceAdvisor rank_imbalance_;
    ExpertImbalanceDetector imbalance_;
    std::optional<ThroughputWatch> throughput_;
};

}  // namespace trainbench
