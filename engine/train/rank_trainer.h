// RankTrainer: one rank's training loop (accumulation window, normalisation, AdamW, schedule).
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include <torch/torch.h>

#include "data/batch_sampler.h"
#include "data/token_source.h"
#include "model/transformer.h"
#include "memory/memory_account.h"
#include "comm/collectives.h"
#include "parallel/gradient_buckets.h"
#include "parallel/paired_residency.h"
#include "train/batch_adaptation.h"
#include "train/fresh_gradient_norms.h"
#include "train/sharded_adamw.h"
#include "trainbench/event_kind.h"
#include "trainbench/noise_scale.h"
#include "train/run_control.h"
#include "trainbench/batch_schedule.h"
#include "trainbench/live_advice.h"
#include "trainbench/metric_bus.h"
#include "trainbench/run_config.h"
#include "trainbench/training_session.h"

namespace trainbench {

// What a rank reports when its loop ends.
struct RankResult {
    RunStatus status = RunStatus::Created;
    int64_t steps = 0;
    int64_t tokens = 0;           // counted target tokens since step 0, resumed ones included
    int64_t tokens_at_start = 0;  // those a resumed checkpoint had already seen
    double final_loss = 0;
    double tokens_per_s = 0;
    int64_t peak_memory_bytes = 0;
    // The batch split in force at the end: an out-of-memory back-off changes it mid-run.
    int64_t micro_batch_size = 0;
    int64_t gradient_accumulation_steps = 0;
    bool out_of_memory = false;
    // Failed only because another rank's failure aborted the collectives: not the cause.
    bool failed_by_another_rank = false;
    std::string error;
};

struct RankSetup {
    const RunConfig* config = nullptr;
    int rank = 0;
    int world_size = 1;
    std::string device = "cpu";  // resolved: cpu | cuda:i
    Collectives* collectives = nullptr;
    // runtime.expert_parallel > 1: this rank's expert group (the EP ranks that exchange tokens)
    // and replica group (the W / EP ranks with the same experts); null otherwise.
    Collectives* expert_collectives = nullptr;
    Collectives* replica_collectives = nullptr;
    RunControl* control = nullptr;
    MetricBus* bus = nullptr;  // rank 0 publishes
    std::chrono::steady_clock::time_point started;
    std::atomic<int64_t>* completed_steps = nullptr;
    std::atomic<int64_t>* completed_tokens = nullptr;  // the tokens axis of the memory samples
    std::string checkpoint_dir;  // rank 0 writes checkpoints here; empty: none
    std::string resume_from;     // checkpoint directory to continue from; empty: fresh start
    bool recover_out_of_memory = true;  // see SessionOptions
    std::optional<ExploredBest> explored_best;  // see SessionOptions
    // Where this rank's CPU allocations are counted (and budgeted); nullptr: not counted.
    MemoryAccount* memory = nullptr;
    // Parameters and gradients in fp64 instead of fp32: for the exactness tests only.
    bool fp64 = false;
    // Gradient bucket sizes: about 25 MiB after a small first one that starts the reduction early.
    int64_t bucket_bytes = 25 << 20;
    int64_t first_bucket_bytes = 1 << 20;
    // Test hook: the rank throws when it reaches this optimizer step (0-based); -1: never.
    int64_t fail_at_step = -1;
    // Test hook: the rank stalls at this optimizer step until the run is stopped; -1: never.
    int64_t stall_at_step = -1;
    // Test hook: sees (and may change) each micro-batch (0-based step, micro-batch) before its
    // forward, e.g. to ignore every target of one; empty: none.
    std::function<void(int64_t step, int64_t micro, MicroBatch& batch)> edit_micro_batch;
};

// The outcome of one accumulation window, identical on every rank (globally reduced).
struct WindowResult {
    double loss_sum = 0;               // summed token loss over the window and all ranks
    int64_t tokens = 0;                // N: counted targets over the window and all ranks
    double aux_loss_sum = 0;           // the sequence-wise balance loss, token-weighted, summed
    double grad_norm = 0;              // of the global mean gradient (the sums / N)
    std::vector<torch::Tensor> loads;  // per MoE layer: tokens per expert, int64 [E], global
    std::vector<int64_t> rank_peak_bytes;  // per rank: the most CPU bytes held during the window
    std::vector<int64_t> rank_received;    // expert parallelism, per rank: routed rows its experts received
    int64_t collectives = 0;           // collective calls this window made
    // The gradient noise scale's parts of this window (train.noise_scale, M >= 2), total and per
    // noiseScaleGroups() entry; empty without.
    std::optional<NoiseScaleParts> noise;
    std::vector<std::optional<NoiseScaleParts>> noise_groups;
};

// How an accumulation window ended.
enum class WindowOutcome {
    Complete,     // gradients reduced (global sums, divided by N in the update)
    Stopped,      // a stop was requested at a micro-batch boundary; the partial window is dropped
    OutOfMemory,  // some rank ran out of memory; every rank dropped the window (agreed)
    StopAgreed,   // sharded state: a rank saw a stop; every rank dropped the window and stops (agreed)
};

class RankTrainer {
public:
    explicit RankTrainer(const RankSetup& setup);
    // Builds the model (rank 0's initial weights broadcast to all), optimizer and buckets.
    void prepare();
    // Runs the K micro-batches of optimizer step `step` (0-based): backward of raw loss sums
    // with no reduction until the last micro-batch, then one all-reduce per gradient bucket
    // plus one for [loss sum, N, expert loads]; .grad is left holding the global sums, which
    // the update divides by N. Returns Stopped when a stop was requested at a micro-batch
    // boundary (the partial window is dropped). An out-of-memory error on any rank is agreed by
    // all in the same reduction, and every rank drops the window.
    WindowOutcome accumulateWindow(int64_t step, WindowResult& out);
    // Clipping, learning rate, AdamW step and the MoE bias update for a window.
    double applyUpdate(int64_t step, const WindowResult& window);
    // The whole loop; never throws (an exception becomes status Failed with the reason).
    RankResult run();

    Transformer& model() { return model_; }
    // Copies of the whole parameters (model()->parameters()'s order) on every rank; at stage 3
    // every rank must call it (one all-gather per unit).
    std::vector<torch::Tensor> wholeParameters();
    int64_t bucketCount() const { return buckets_ ? buckets_->count() : 0; }
    // Expert parallelism: the buckets of the routed experts' gradients (0 without).
    int64_t expertBucketCount() const { return expert_buckets_ ? expert_buckets_->count() : 0; }
    // Calls made so far through this rank's collectives, every group's.
    int64_t callsMade() const;
    // Buckets the last window started during its backward (overlapped reduction).
    int64_t bucketsOverlapped() const { return buckets_ ? buckets_->launchedDuringBackward() : 0; }

private:
    RankResult loop();
    // What this rank reports when it ends, however it ends (completed, stopped, failed): the
    // steps done, the tokens, the last loss, the split in force and the most memory held.
    RankResult resultAt(RunStatus status, int64_t steps) const;
    // After an agreed out-of-memory window: the largest smaller micro-batch that divides the
    // current one, with K scaled so m x K x W stays. Returns false when m is already 1.
    bool backOffMicroBatch(int64_t step);
    void dropPrefetch();
    // Stages 2 and 3 around each micro-batch (also one a rank skips, so its calls pair up).
    void beginMicroBatch();
    void endMicroBatch();
    // Micro-batches per rank in window `step`: K, or fewer in the incomplete last window that
    // train.samples leaves (scaled by its own token count like any other window).
    int64_t windowMicroBatches(int64_t step) const;
    // The most bytes this rank held since the window began: its CPU account, or the CUDA
    // caching allocator's peak on its GPU.
    int64_t windowPeakBytes() const;
    // The squared norm of the window's gradient sums per noise-scale group, over every rank.
    std::vector<double> groupGradSquares();
    // `loads`: hostExpertLoads of the window (rank 0; undefined elsewhere or without MoE).
    void publishStep(int64_t step, const WindowResult& w, const torch::Tensor& loads, double lr, double tokens_per_s,
                     double step_time);
    // The window's tokens per expert as one fp64 CPU tensor [MoE layers, experts]; undefined
    // without MoE layers.
    torch::Tensor hostExpertLoads(const WindowResult& w) const;
    void publishPoints(std::vector<MetricPoint> points);
    void publishEvent(int64_t step, EventKind kind, const std::string& message);
    MetricPoint point(int64_t step, const std::string& key, double value) const;

    RankSetup s_;
    RunConfig cfg_;  // this rank's copy: an out-of-memory back-off changes the batch split
    torch::Device device_;
    Transformer model_;
    BatchSchedule schedule_;  // the global batch of each step (train.batch_policy)
    int64_t last_batch_change_ = -1;  // the step whose batch_change was announced last
    // train.batch_policy adaptive: when the batch grows; empty under the other policies.
    std::optional<BatchAdaptation> adaptation_;
    std::string growth_reason_;  // the last growth's estimate, for its batch_change event
    bool bf16_;  // computing in bf16 (runtime.dtype bf16, or auto resolved so): autocast forward passes, fp32 master weights
    std::unique_ptr<TokenSource> source_;
    // The first micro-batch of the next window, read while this one computes. Declared after
    // source_ so it is destroyed (and its read joined) first.
    std::future<MicroBatch> prefetched_;
    int64_t prefetched_step_ = -1;
    std::unique_ptr<torch::optim::AdamW> optimizer_;
    std::unique_ptr<GradientBuckets> buckets_;
    // Expert parallelism: the routed experts' gradients, reduced over the replica group (the
    // dense ones stay in buckets_); null otherwise.
    std::unique_ptr<GradientBuckets> expert_buckets_;
    std::vector<char> is_routed_expert_;  // per parameter, under expert parallelism
    torch::Tensor routed_mask_;           // the same as fp64 1 / 0 on the rank's device
    // Indices into params_: what buckets_ holds (everything but the routed experts under expert
    // parallelism) and what expert_buckets_ holds.
    std::vector<size_t> dense_part_, expert_part_;
    // Expert parallelism at stage 1: the experts' moments sharded over their replica group.
    std::unique_ptr<ShardedAdamW> expert_sharded_;
    double all_to_all_seconds_ = 0;       // rank 0's exchange time up to the last published step
    double routed_window_sq_ = 0;         // expert parallelism: the routed experts' share of |sum_k s_k|^2
    // runtime.zero_stage 3: this rank's slices of the weights, units gathered as the model uses
    // them (the model's residency); null below stage 3.
    std::unique_ptr<ShardedWeights> sharded_weights_;
    // Stage 3 under expert parallelism: sharded_weights_ holds the dense part (over the world),
    // expert_weights_ the routed experts (over the replica group); the model calls both.
    std::unique_ptr<ShardedWeights> expert_weights_;
    std::unique_ptr<PairedResidency> paired_residency_;
    // runtime.zero_stage >= 1: the AdamW state of this rank's slices (optimizer_ then only restores
    // and writes nothing); null at stage 0.
    std::unique_ptr<ShardedAdamW> sharded_;
    std::vector<torch::Tensor> params_;
    std::vector<int> group_of_param_;  // noiseScaleGroupsOf, per parameter
    torch::Tensor group_index_;        // the same as an int64 tensor on the rank's device
    std::unique_ptr<FreshGradientNorms> fresh_norms_;  // null: no noise scale
    std::vector<MoE> moe_layers_;
    std::vector<int64_t> moe_indices_;
    int64_t tokens_seen_ = 0;
    int64_t tokens_at_start_ = 0;  // from the resumed checkpoint; 0 for a new run
    int64_t start_step_ = 0;
    int64_t current_step_ = 0;
    double last_loss_ = std::numeric_limits<double>::quiet_NaN();
    int64_t last_checkpoint_step_ = -1;
    int64_t run_peak_bytes_ = 0;
    // Every rank calls it (a sharded state is gathered first); rank 0 writes.
    void saveCheckpoint(int64_t steps_done, double last_loss);
    // The checkpoint at the run's end (completed or stopped), unless train.final_checkpoint is off.
    void saveFinalCheckpoint(int64_t steps_done);
    // Expert parallelism: `local` (weights or moments of this rank) with every routed expert of
    // the expert group, gathered from its ranks under its own name; collective over the group.
    NamedTensors gatherExperts(const NamedTensors& local);
    NamedTensors resumed_optimizer_;
    std::vector<double> resumed_noise_;  // the checkpoint's noise-scale state, until prepare() restores it
    // Rank 0 only: the live-advice detectors see every completed step.
    void adviseAfterStep(int64_t step, const torch::Tensor& loads, double loss, double tokens_per_s,
                         const std::vector<int64_t>& rank_received);
    // The noise scale smoothed over the run, in total and per group: every rank keeps it alike
    // (the same reduced statistics), so an adaptive batch grows at the same step everywhere.
    void observeNoise(const WindowResult& window);
    // train.batch_policy adaptive, after step `step`: grows the next step's batch when due.
    void adaptBatch(int64_t step);
    NoiseScaleTracker noise_;
    std::vector<NoiseScaleTracker> noise_groups_;
    std::vector<char> group_present_;  // per noise-scale group: some parameter is in it
    LossSpikeDetector spikes_;
    CriticalBatchAdvisor critical_batch_;
    RankImbalanceAdvisor rank_imbalance_;
    double tokens_per_sequence_ = 1;  // counted targets per sequence in the last estimated window
    ExpertImbalanceDetector imbalance_;
    std::optional<ThroughputWatch> throughput_;
};

// Runs one rank to the end; never throws.
RankResult runRank(const RankSetup& setup);

}  // namespace trainbench
