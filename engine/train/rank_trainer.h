// RankTrainer: one rank's training loop (accumulation window, normalisation, AdamW, schedule).
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "data/batch_sampler.h"
#include "data/token_source.h"
#include "model/transformer.h"
#include "memory/memory_account.h"
#include "comm/collectives.h"
#include "parallel/gradient_layout.h"
#include "train/batch_adaptation.h"
#include "model/compute_precision.h"
#include "train/fresh_gradient_norms.h"
#include "train/micro_batch_reader.h"
#include "train/run_control.h"
#include "train/sample_writer.h"
#include "train/step_reporter.h"
#include "train/window_order.h"
#include "train/window_statistics.h"
#include "trainbench/batch_schedule.h"
#include "trainbench/event_kind.h"
#include "trainbench/live_advice.h"
#include "trainbench/metric_bus.h"
#include "trainbench/run_config.h"
#include "trainbench/run_status.h"

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
    int64_t host_peak_bytes = 0;  // runtime.offload optimizer: the host tier's most
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
    // runtime.offload optimizer: where the rank's offloaded moments are counted; nullptr: in `memory`.
    MemoryAccount* host_memory = nullptr;
    // What is sharded and where the state lives: placementFor(config, ...), which the session
    // asks with the plan's budget (a test with its own hooks). Its sharding must be the config's.
    Placement placement;
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
    // Builds the model (rank 0's initial weights broadcast to all) and its layout (optimizer,
    // buckets, shards).
    void prepare();
    // Runs the K micro-batches of optimizer step `step` (0-based): backward of raw loss sums
    // with no reduction until the last micro-batch, then the layout's gradient reduction plus
    // one for the window's statistics; .grad is left holding the global sums (or this rank's
    // slices of them), which the update divides by N. Returns Stopped when a stop was requested
    // at a micro-batch boundary (the partial window is dropped). An out-of-memory error on any
    // rank is agreed by all in the same reduction, and every rank drops the window.
    WindowOutcome accumulateWindow(int64_t step, WindowResult& out);
    // Clipping, learning rate, AdamW step and the MoE bias update for a window.
    double applyUpdate(int64_t step, const WindowResult& window);
    // The whole loop; never throws (an exception becomes status Failed with the reason).
    RankResult run();

    Transformer& model() { return model_; }
    // Copies of the whole parameters (model()->parameters()'s order) on every rank; at stage 3,
    // and with bf16 device weights (read from the master), every rank must call it (one
    // all-gather per unit or bucket).
    std::vector<torch::Tensor> wholeParameters() { return layout_->wholeParameters(); }
    // What a checkpoint of now would hold (rank 0; every rank must call it: the gathers).
    CheckpointTensors gatherCheckpoint() { return layout_->gatherCheckpoint(); }
    int64_t bucketCount() const { return layout_ ? layout_->bucketCount() : 0; }
    // Expert parallelism: the buckets of the routed experts' gradients (0 without).
    int64_t expertBucketCount() const { return layout_ ? layout_->expertBucketCount() : 0; }
    // Calls made so far through this rank's collectives, every group's.
    int64_t callsMade() const;
    // Buckets the last window started during its backward (overlapped reduction).
    int64_t bucketsOverlapped() const { return layout_ ? layout_->bucketsOverlapped() : 0; }

private:
    RankResult loop();
    // What this rank reports when it ends, however it ends (completed, stopped, failed): the
    // steps done, the tokens, the last loss, the split in force and the most memory held.
    RankResult resultAt(RunStatus status, int64_t steps) const;
    // After an agreed out-of-memory window: the largest smaller micro-batch that divides the
    // current one, with K scaled so m x K x W stays. Returns false when m is already 1.
    bool backOffMicroBatch(int64_t step);
    // Where micro-batch k of window `step` lies, under the split in force.
    MicroBatchPlace placeOf(int64_t step, int64_t k) const;
    // Micro-batches per rank in window `step`: K, or fewer in the incomplete last window that
    // train.samples leaves (scaled by its own token count like any other window).
    int64_t windowMicroBatches(int64_t step) const;
    // The most bytes this rank held since the window began: its CPU account, or the CUDA
    // caching allocator's peak on its GPU.
    int64_t windowPeakBytes() const;
    // The squared norm of the window's gradient sums per noise-scale group, over every rank, and
    // under expert parallelism the routed experts' share of their total (0 otherwise).
    std::pair<std::vector<double>, double> groupGradSquares();
    // Rank 0 announces a change of the global batch once, when its first step begins.
    void announceBatchChange(int64_t step);
    // The reporter's events (none before prepare() made it).
    void event(int64_t step, EventKind kind, const std::string& message);
    // Every rank calls it (a sharded state is gathered first); rank 0 writes.
    void saveCheckpoint(int64_t steps_done, double last_loss);
    // The checkpoint at the run's end (completed or stopped), unless train.final_checkpoint is off.
    void saveFinalCheckpoint(int64_t steps_done);
    // train.sample_every: every rank calls it (a divided model is gathered first); rank 0
    // writes the samples as events. A failure to sample is a warning; training goes on.
    void writeSamples(int64_t steps_done);
    // train.batch_policy adaptive, after step `step`: grows the next step's batch when due.
    void adaptBatch(int64_t step);

    RankSetup s_;
    RunConfig cfg_;  // this rank's copy: an out-of-memory back-off changes the batch split
    torch::Device device_;
    Transformer model_;
    BatchSchedule schedule_;  // the global batch of each step (train.batch_policy)
    int64_t last_batch_change_ = -1;  // the step whose batch_change was announced last
    // train.batch_policy adaptive: when the batch grows; empty under the other policies.
    std::optional<BatchAdaptation> adaptation_;
    std::string growth_reason_;  // the last growth's estimate, for its batch_change event
    // runtime.dtype (auto resolved; fp32 for an fp64 run): the forward passes' precision, fp32 master weights
    ComputePrecision precision_;
    std::unique_ptr<TokenSource> source_;
    // Declared after source_ so it is destroyed (and its reads joined) first.
    std::unique_ptr<MicroBatchReader> reader_;
    // Where gradients, moments and weights live (runtime.zero_stage, runtime.expert_parallel).
    std::unique_ptr<GradientLayout> layout_;
    // The order of a window's forwards and backwards (runtime.window_schedule).
    std::unique_ptr<WindowOrder> order_;
    std::unique_ptr<StepReporter> report_;
    std::unique_ptr<SampleWriter> samples_;  // rank 0, with train.sample_every
    std::vector<torch::Tensor> params_;
    std::vector<int> group_of_param_;  // noiseScaleGroupsOf, per parameter
    std::unique_ptr<FreshGradientNorms> fresh_norms_;  // null: no noise scale
    std::vector<MoE> moe_layers_;
    int64_t tokens_seen_ = 0;
    int64_t tokens_at_start_ = 0;  // from the resumed checkpoint; 0 for a new run
    int64_t start_step_ = 0;
    int64_t current_step_ = 0;
    double last_loss_ = std::numeric_limits<double>::quiet_NaN();
    int64_t last_checkpoint_step_ = -1;
    int64_t run_peak_bytes_ = 0;
    GradientLayout::OffloadTraffic traffic_seen_;  // the layout's offloadTraffic at the last window's statistics
    int64_t shard_bytes_seen_ = 0;  // the layout's shardBytesGathered at the last window's statistics
};

// Runs one rank to the end; never throws.
RankResult runRank(const RankSetup& setup);

}  // namespace trainbench
