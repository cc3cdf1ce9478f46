// The rank loop. Loss maths (docs/design/accumulation.md): back-propagate raw token-loss sums S[r,k], count the
// targets N[r,k], reduce both across ranks once per window, and scale the summed gradient by 1/N
// with N = sum_{r,k} N[r,k] (inside the fused AdamW step, with the clipping); then move the MoE
// biases.
#include "train/rank_trainer.h"

#include "offload/offload_dir.h"

#include <sys/resource.h>

#include <cmath>
#include <future>
#include <sstream>

#include "data/batch_sampler.h"
#include "data/evaluate.h"
#include "weights/hf_weights.h"
#include "memory/cuda_memory.h"
#include "memory/device_selection.h"
#include "trainbench/compute_dtype.h"
#include "trainbench/memory_plan.h"
#include "train/checkpoint.h"
#include "memory/host_to_device.h"
#include "train/fresh_gradient_norms.h"
#include "trainbench/config_io.h"
#include "train/lr_schedule.h"
#include "train/micro_batch_reader.h"
#include "train/window_noise.h"
#include "train/window_statistics.h"
#include "trainbench/event_kind.h"
#include "trainbench/metric_keys.h"

namespace trainbench {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int64_t hostPeakBytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace

RankTrainer::RankTrainer(const RankSetup& setup)
    : s_(setup),
      cfg_(*setup.config),
      device_(setup.device),
      model_(cfg_.model),
      schedule_(cfg_),
      adaptation_(schedule_.adapts() ? std::optional<BatchAdaptation>(std::in_place, cfg_.train, schedule_.unit())
                                     : std::nullopt),
      precision_(computePrecision(cfg_, setup.device, setup.fp64)) {
    model_->setRecomputation(recomputation(cfg_.runtime));
    model_->setHeadChunkTokens(cfg_.runtime.head_chunk_tokens);
}

void RankTrainer::prepare() {
    // On a GPU the budget is a cap on this process's caching allocator (CPU ranks have theirs
    // in the tracking allocator's account).
    if (cudaDeviceIndex(s_.device) >= 0 && cfg_.runtime.memory_limit_mb > 0)
        limitCudaMemory(cudaDeviceIndex(s_.device), cfg_.runtime.memory_limit_mb * 1024 * 1024);
    source_ = openTokenSource(cfg_);
    reader_ = std::make_unique<MicroBatchReader>(*source_, s_.rank, s_.memory);
    initializeWeights(model_, static_cast<uint64_t>(cfg_.train.seed));
    // train.init_from: rank 0 reads the starting weights, the broadcast below hands them on.
    if (!cfg_.train.init_from.empty() && s_.resume_from.empty() && s_.rank == 0)
        loadWeightsInto(model_, cfg_.train.init_from);
    if (s_.fp64) model_->to(torch::kFloat64);
    model_->to(device_);
    model_->train();
    // Every replica starts from rank 0's weights and biases.
    std::vector<torch::Tensor> state;
    for (auto& [name, tensor] : stateDict(model_)) state.push_back(tensor);
    s_.collectives->broadcast(state, 0);
    std::optional<Checkpoint> checkpoint;
    if (!s_.resume_from.empty()) {
        // Every rank reads the same files, so replicas stay identical without a broadcast; the
        // model is still whole here, so any layout resumes any other (the saved state is whole).
        checkpoint = readCheckpoint(s_.resume_from);
        loadIntoStateDict(stateDict(model_), checkpoint->model, checkpoint->path + "/model.safetensors");
        start_step_ = checkpoint->state.step;
        tokens_seen_ = checkpoint->state.tokens;
        tokens_at_start_ = tokens_seen_;
        last_loss_ = checkpoint->state.last_loss;
        last_checkpoint_step_ = start_step_;
        if (schedule_.adapts()) {
            schedule_.restore(checkpoint->state.batch_changes);
            adaptation_->restore(checkpoint->state.batch_dwell_tokens);
        }
    }
    LayoutSetup layout;
    layout.config = &cfg_;
    layout.rank = s_.rank;
    layout.world_size = s_.world_size;
    layout.device = device_;
    layout.collectives = s_.collectives;
    layout.host_memory = s_.host_memory;
    layout.placement = s_.placement;
    layout.expert_collectives = s_.expert_collectives;
    layout.replica_collectives = s_.replica_collectives;
    layout.bucket_bytes = s_.bucket_bytes;
    layout.first_bucket_bytes = s_.first_bucket_bytes;
    layout_ = makeGradientLayout(layout, model_, checkpoint ? &checkpoint->optimizer : nullptr);
    order_ = makeWindowOrder(s_.placement);
    // What making the layout wrote (a resumed state, bf16 weights' master) is no step's traffic.
    traffic_seen_ = layout_->offloadTraffic();
    shard_bytes_seen_ = layout_->shardBytesGathered();
    params_ = model_->parameters();  // this rank's: under expert parallelism its experts only
    group_of_param_ = noiseScaleGroupsOf(model_);
    moe_layers_ = model_->moeLayers();
    ReporterSetup report;
    report.bus = s_.bus;
    report.rank = s_.rank;
    report.world_size = s_.world_size;
    report.device = s_.device;
    report.started = s_.started;
    report.explored_best = s_.explored_best;
    report.moe_layer_indices = model_->moeLayerIndices();
    report.group_of_param = group_of_param_;
    report.expert_group = layout_->expertGroup();
    report.expert_parallel = cfg_.runtime.expert_parallel;
    report.n_routed_experts = cfg_.model.n_routed_experts;
    report.adaptive_batch = adaptation_.has_value();
    report.offload_files = !cfg_.runtime.offload_dir.empty() && !isChoice(cfg_.runtime.offload, Offload::None);
    report.sharded_weights = s_.placement.sharded.weights;
    // (boundaries in offload_dir's file cross the link on their way from a GPU too)
    report.host_link = s_.placement.host_step || s_.placement.boundaries == Tier::Host ||
                       (s_.placement.boundaries == Tier::File && !device_.is_cpu());
    report.start_step = start_step_;
    report.warmup_steps = cfg_.train.warmup_steps;
    if (!cfg_.data.sources.empty()) {
        const TokenSource* source = source_.get();
        report.samples_by_source = [source](int64_t samples) { return source->samplesBySource(samples); };
        report.seq_len = cfg_.train.seq_len;
    }
    report_ = std::make_unique<StepReporter>(std::move(report));
    if (checkpoint) report_->restoreNoise(checkpoint->state.noise_scale);
    if (computeDtype(cfg_.runtime) == ComputeDtype::Auto && !s_.fp64)
        event(start_step_, EventKind::Precision, explainComputeDtype(cfg_, cudaDeviceIndex(s_.device) >= 0));
}

WindowOutcome RankTrainer::accumulateWindow(int64_t step, WindowResult& out) {
    const TrainConfig& t = cfg_.train;
    const int64_t calls_before = callsMade();
    layout_->beginWindow();
    if (s_.memory) s_.memory->resetPeak();
    resetCudaPeak(cudaDeviceIndex(s_.device));
    auto float_options = torch::TensorOptions(device_).dtype(torch::kFloat64);
    auto loss_sum = torch::zeros({}, float_options);
    auto count = torch::zeros({}, float_options.dtype(torch::kInt64));
    auto aux_sum = torch::zeros({}, float_options);
    const int64_t K = windowMicroBatches(step);
    // The noise scale needs two micro-batches or more a window over the ranks: its hooks come
    // with the first such window (also one a ramp or an out-of-memory back-off brings), on every
    // rank at the same step, so the statistics keep one layout everywhere.
    // Under expert parallelism the routed experts' small batches are the expert group's unions.
    if (!fresh_norms_ && cfg_.train.noise_scale && K * s_.world_size >= 2)
        fresh_norms_ = std::make_unique<FreshGradientNorms>(params_, group_of_param_, device_, layout_->routedExpertMask());
    // A data file deleted or rewritten under the run ends it here, named, before a read of a
    // truncated mapping could kill the process.
    if (std::string problem = source_->fileProblem(); !problem.empty())
        throw std::runtime_error("data file " + problem + "; restore it and resume from the last checkpoint");
    if (fresh_norms_) fresh_norms_->beginWindow(K);
    WindowWork work;
    work.micro_batches = K;
    work.place = [&](int64_t k) { return placeOf(step, k); };
    if (!schedule_.finished(step + 1)) work.next_window = placeOf(step + 1, 0);  // an adaptive growth drops it (adaptBatch)
    work.at_boundary = [&](int64_t) {
        if (step == s_.fail_at_step) throw std::runtime_error("injected failure at step " + std::to_string(step + 1));
        if (step == s_.stall_at_step) s_.control->waitForStop();
    };
    if (s_.edit_micro_batch) work.edit = [&](int64_t k, MicroBatch& batch) { s_.edit_micro_batch(step, k, batch); };
    // Multi-token prediction: the window's counted targets per depth over every rank, before the
    // first backward, give each depth's weight in the shared gradient sum (WindowWork::mtp_weights).
    const int64_t D = model_->mtpDepth();
    std::vector<int64_t> mtp_tokens;
    const double mtp_weight = cfg_.train.mtpLossWeightAt(schedule_.firstSample(step) * cfg_.train.seq_len);
    if (D > 0) work.mtp_weights = [&](const torch::Tensor& counts) {
        WindowStatistics counted(device_);
        const auto slot = counted.add(counts.to(device_));
        counted.reduce(*s_.collectives);
        const double main_tokens = counted.value(slot, 0);
        std::vector<double> weights(D, 0.0);
        mtp_tokens.assign(D, 0);
        for (int64_t k = 1; k <= D; ++k) {
            const double depth_tokens = counted.value(slot, k);
            mtp_tokens[k - 1] = static_cast<int64_t>(depth_tokens);
            // L = S / N + lambda / D x sum_k S_k / N_k, and the optimizer divides the sums by N.
            if (depth_tokens > 0) weights[k - 1] = mtp_weight / double(D) * main_tokens / depth_tokens;
        }
        return torch::tensor(weights, torch::kFloat64).to(device_);
    };
    WindowParts parts{model_, *layout_, *reader_, *s_.control, fresh_norms_.get(), device_, precision_, s_.placement.boundaries};
    if (s_.placement.boundaries == Tier::File)
        parts.boundary_file = offloadFilePath(cfg_.runtime.offload_dir, s_.rank, "all", "boundaries");
    // Where a stop is agreed (StopRule), the rank notes it and the window ends dropped by all.
    WindowTotals totals{loss_sum, count, aux_sum};
    if (D > 0) totals.mtp_sums = torch::zeros({D}, float_options);
    if (!order_->run(work, parts, totals)) return WindowOutcome::Stopped;
    const bool out_of_memory = totals.out_of_memory, stop_seen = totals.stop_seen;

    // One reduction carries the window's loss sum, its target count, whether any rank ran out of
    // memory or saw a stop, every rank's peak bytes (each rank fills its own slot) and every
    // layer's load. It comes before the gradient reduction (deferred mode) so that a dropped
    // window skips that; with overlap the buckets are already under way and are waited for, unused.
    const int64_t W = s_.world_size;
    WindowStatistics stats(device_);
    const auto loss_slot = stats.add(loss_sum);
    const auto tokens_slot = stats.add(count);
    const auto out_of_memory_slot = stats.add(out_of_memory ? 1.0 : 0.0);
    const auto stop_slot = stats.add(stop_seen ? 1.0 : 0.0);
    const auto peaks_slot = stats.perRank(W, s_.rank, double(windowPeakBytes()));
    // Under expert parallelism, every rank's routed rows received.
    Collectives* expert_group = layout_->expertGroup();
    WindowStatistics::Slot received_slot;
    if (expert_group) {
        int64_t received = 0;
        for (auto& moe : moe_layers_) received += moe->takeReceived();
        received_slot = stats.perRank(W, s_.rank, double(received));
    }
    const auto aux_slot = stats.add(aux_sum);
    WindowStatistics::Slot mtp_slot;
    if (D > 0) mtp_slot = stats.add(totals.mtp_sums);
    // The offload files' traffic since the last window's statistics, summed over the ranks.
    // (the unit order's boundary activations kept in host memory cross the link too)
    const GradientLayout::OffloadTraffic traffic = layout_->offloadTraffic();
    // (and those kept in offload_dir's file pass through it)
    const auto read_slot = stats.add(double(traffic.read - traffic_seen_.read + totals.boundary_bytes_read));
    const auto written_slot = stats.add(double(traffic.written - traffic_seen_.written + totals.boundary_bytes_written));
    const auto to_device_slot =
        stats.add(double(traffic.to_device - traffic_seen_.to_device + totals.boundary_bytes_up));
    const auto to_host_slot = stats.add(double(traffic.to_host - traffic_seen_.to_host + totals.boundary_bytes_down));
    traffic_seen_ = traffic;
    const int64_t gathered = layout_->shardBytesGathered();
    const auto gathered_slot = stats.add(double(gathered - shard_bytes_seen_));
    shard_bytes_seen_ = gathered;
    std::vector<WindowStatistics::Slot> load_slots;
    for (auto& moe : moe_layers_) load_slots.push_back(stats.add(moe->takeLoad()));
    WindowNoise noise;
    if (fresh_norms_) noise.add(stats, *fresh_norms_, expert_group, cfg_.runtime.expert_parallel, K);
    // The step's one host synchronisation.
    stats.reduce(*s_.collectives);
    out.rank_peak_bytes.assign(W, 0);
    for (int64_t r = 0; r < W; ++r) out.rank_peak_bytes[r] = static_cast<int64_t>(stats.value(peaks_slot, r));
    if (stats.value(out_of_memory_slot) > 0 || stats.value(stop_slot) > 0) {
        layout_->dropWindow();
        out.collectives = callsMade() - calls_before;
        return stats.value(stop_slot) > 0 ? WindowOutcome::StopAgreed : WindowOutcome::OutOfMemory;
    }
    layout_->reduceWindow();

    out.loss_sum = stats.value(loss_slot);
    out.tokens = static_cast<int64_t>(stats.value(tokens_slot));
    out.rank_received.assign(received_slot.valid() ? W : 0, 0);
    for (int64_t r = 0; r < static_cast<int64_t>(out.rank_received.size()); ++r)
        out.rank_received[r] = static_cast<int64_t>(stats.value(received_slot, r));
    out.aux_loss_sum = stats.value(aux_slot);
    out.mtp_loss_sums.assign(D, 0.0);
    for (int64_t k = 0; k < D; ++k) out.mtp_loss_sums[k] = stats.value(mtp_slot, k);
    out.mtp_tokens = mtp_tokens;
    out.mtp_weight = mtp_weight;
    out.offload_read_bytes = static_cast<int64_t>(stats.value(read_slot));
    out.offload_written_bytes = static_cast<int64_t>(stats.value(written_slot));
    out.to_device_bytes = static_cast<int64_t>(stats.value(to_device_slot));
    out.to_host_bytes = static_cast<int64_t>(stats.value(to_host_slot));
    out.shard_gathered_bytes = static_cast<int64_t>(stats.value(gathered_slot));
    out.loads.clear();
    for (const auto& slot : load_slots) out.loads.push_back(stats.tensor(slot).to(torch::kInt64));
    // .grad holds the window's raw sums; the division by N happens as the fused AdamW step reads
    // them (applyUpdate), not in a pass of its own. The norm of the mean gradient is theirs / N.
    const auto [group_squares, routed_sq] = groupGradSquares();
    double window_sq = 0;
    for (double v : group_squares) window_sq += v;
    out.grad_norm = out.tokens > 0 ? std::sqrt(window_sq) / double(out.tokens) : 0.0;
    // The noise scale's parts, before clipping.
    out.noise.reset();
    out.noise_groups.clear();
    if (fresh_norms_) noise.read(stats, group_squares, routed_sq, out);
    out.collectives = callsMade() - calls_before;
    return WindowOutcome::Complete;
}

int64_t RankTrainer::callsMade() const {
    int64_t calls = 0;
    for (const Collectives* group : {s_.collectives, s_.expert_collectives, s_.replica_collectives})
        if (group) calls += group->calls();
    return calls;
}

int64_t RankTrainer::windowPeakBytes() const {
    if (s_.memory) return s_.memory->peak.load();
    return cudaPeakAllocatedBytes(cudaDeviceIndex(s_.device));
}

int64_t RankTrainer::windowMicroBatches(int64_t step) const {
    return schedule_.accumulation(step, cfg_.train.micro_batch_size);
}

MicroBatchPlace RankTrainer::placeOf(int64_t step, int64_t k) const {
    MicroBatchPlace place;
    place.step = step;
    place.first_sample = schedule_.firstSample(step);
    place.k = k;
    place.micro_batch_size = cfg_.train.micro_batch_size;
    place.window = windowMicroBatches(step);
    place.seq_len = cfg_.train.seq_len;
    place.seed = static_cast<uint64_t>(cfg_.train.seed);
    return place;
}

bool RankTrainer::backOffMicroBatch(int64_t step) {
    TrainConfig& t = cfg_.train;
    const int64_t old_m = t.micro_batch_size, old_k = t.gradient_accumulation_steps;
    int64_t m = old_m / 2;
    while (m > 1 && old_m % m != 0) --m;
    if (old_m <= 1) return false;
    reader_->dropAhead();  // it was read for the old split
    t.micro_batch_size = m;
    t.gradient_accumulation_steps = old_k * (old_m / m);
    std::ostringstream why;
    why << "out of memory at step " << step + 1 << ": micro_batch_size " << old_m << " -> " << m
        << ", gradient_accumulation_steps " << old_k << " -> " << t.gradient_accumulation_steps
        << " (global batch " << cfg_.globalBatch() << " kept); the step is redone";
    event(step, EventKind::OutOfMemoryBackoff, why.str());
    return true;
}

std::pair<std::vector<double>, double> RankTrainer::groupGradSquares() {
    const int64_t groups = static_cast<int64_t>(noiseScaleGroups().size());
    const GroupSquares sq = layout_->groupSquares(group_of_param_, groups);
    // One copy to the host, the routed share with it.
    auto host = (sq.routed.defined() ? torch::cat({sq.squares, sq.routed}) : sq.squares).cpu();
    const double* values = host.data_ptr<double>();
    return {std::vector<double>(values, values + groups), sq.routed.defined() ? values[groups] : 0.0};
}

double RankTrainer::applyUpdate(int64_t step, const WindowResult& w) {
    const TrainConfig& t = cfg_.train;
    // The gradients are the window's sums: the fused step divides them by N, and by norm / clip
    // when clipping, as it reads them (and leaves the mean, clipped, in .grad).
    double grad_divisor = double(w.tokens);
    if (t.grad_clip > 0 && w.grad_norm > t.grad_clip) grad_divisor *= (w.grad_norm + 1e-6) / t.grad_clip;
    // Where the batch changes, the schedule is counted in tokens so that it ends at the planned
    // count, and the rate follows the batch (train.lr_batch_rule).
    double lr = 0;
    if (schedule_.varies() || t.warmup_tokens > 0) {
        TokenClock clock;
        clock.step = step;
        clock.tokens_before = schedule_.tokensBefore(step);
        clock.tokens_through = clock.tokens_before + schedule_.globalBatch(step) * t.seq_len;
        clock.warmup_end = t.warmup_tokens > 0 ? t.warmup_tokens : schedule_.tokensBefore(t.warmup_steps);
        clock.total = schedule_.plannedTokens();
        lr = learningRate(t, clock) * schedule_.lrFactor(step);
    } else {
        lr = learningRate(t, step, schedule_.plannedSteps());
    }
    layout_->step(lr, grad_divisor);
    for (size_t i = 0; i < moe_layers_.size(); ++i) moe_layers_[i]->updateBias(w.loads[i], cfg_.model.bias_update_speed);
    return lr;
}

RankResult RankTrainer::loop() {
    prepare();
    // Why the loop ended, where a failure says so; the rest comes from resultAt.
    bool out_of_memory = false;
    std::string error;
    if (source_->entropyFloor() >= 0 && start_step_ == 0)
        report_->points({report_->point(0, tokens_seen_, metric::kEntropyFloor, source_->entropyFloor())});
    const TrainConfig& t = cfg_.train;
    int64_t bad_steps = 0;
    double tokens_per_s = 0;
    auto finish = [&](RunStatus status, int64_t steps) {
        RankResult result = resultAt(status, steps);
        result.tokens_per_s = tokens_per_s;
        result.out_of_memory = out_of_memory;
        result.error = error;
        return result;
    };
    if (s_.rank == 0) {
        s_.completed_steps->store(start_step_);
        if (s_.completed_tokens) s_.completed_tokens->store(schedule_.tokensBefore(start_step_));
    }
    int64_t step = start_step_;
    for (; !schedule_.finished(step); ++step) {
        auto step_start = std::chrono::steady_clock::now();
        WindowResult window;
        // A stop inside a window drops the partial window: nothing is stepped.
        current_step_ = step;
        announceBatchChange(step);
        const WindowOutcome outcome = accumulateWindow(step, window);
        if (outcome == WindowOutcome::Stopped) {
            // Ranks that already passed this boundary wait in a collective: release them.
            s_.collectives->abort(kStopRequested);
            saveFinalCheckpoint(step);  // a stop keeps what was trained
            return finish(RunStatus::Stopped, step);
        }
        if (outcome == WindowOutcome::StopAgreed) {
            saveFinalCheckpoint(step);  // every rank is here: the sharded state can be gathered
            return finish(RunStatus::Stopped, step);
        }
        if (outcome == WindowOutcome::OutOfMemory) {
            run_peak_bytes_ = std::max(run_peak_bytes_, windowPeakBytes());
            if (!s_.recover_out_of_memory) {
                out_of_memory = true;
                error = "out of memory at step " + std::to_string(step + 1) + " with micro_batch_size " +
                               std::to_string(cfg_.train.micro_batch_size);
                return finish(RunStatus::Failed, step);
            }
            if (!backOffMicroBatch(step)) {
                out_of_memory = true;
                error = "out of memory at step " + std::to_string(step + 1) +
                               " even with micro_batch_size 1; " + outOfMemoryAdvice(cfg_);
                return finish(RunStatus::Failed, step);
            }
            --step;  // the same optimizer step again, with the same samples in smaller pieces
            continue;
        }
        if (window.tokens == 0) {
            event(step + 1, EventKind::Warning,
                         "step " + std::to_string(step + 1) + " has no counted target tokens; update skipped");
            continue;
        }
        const double mean_loss = window.loss_sum / double(window.tokens);
        // Loss and norm are global, so every rank takes the same decision here.
        if (!std::isfinite(mean_loss) || !std::isfinite(window.grad_norm)) {
            ++bad_steps;
            std::ostringstream why;
            why << "step " << step + 1 << " skipped: loss " << mean_loss << ", grad norm " << window.grad_norm;
            event(step + 1, EventKind::SkippedStep, why.str());
            if (bad_steps >= t.max_bad_steps) {
                error = std::to_string(bad_steps) + " consecutive non-finite steps (train.max_bad_steps)";
                return finish(RunStatus::Failed, step);
            }
            continue;
        }
        bad_steps = 0;
        const int64_t calls_before_update = callsMade();
        const double lr = applyUpdate(step, window);
        window.collectives += callsMade() - calls_before_update;  // stage 1's all-gathers
        // The run's peak includes the update's temporaries and the AdamW moments of step 1.
        run_peak_bytes_ = std::max(run_peak_bytes_, windowPeakBytes());
        tokens_seen_ += window.tokens;
        last_loss_ = mean_loss;
        StepFacts facts;
        facts.step = step + 1;
        facts.tokens = tokens_seen_;
        facts.lr = lr;
        facts.micro_batch_size = cfg_.train.micro_batch_size;
        facts.accumulation = windowMicroBatches(step);
        facts.samples_end = schedule_.firstSample(step) +
                            facts.micro_batch_size * facts.accumulation * static_cast<int64_t>(s_.world_size);
        report_->observeNoise(facts, window);
        adaptBatch(step);
        facts.step_time = secondsSince(step_start);
        tokens_per_s = facts.tokens_per_s = double(window.tokens) / facts.step_time;
        if (s_.rank == 0) {
            s_.completed_steps->store(step + 1);
            if (s_.completed_tokens) s_.completed_tokens->store(schedule_.tokensBefore(step + 1));
        }
        // Rank 0 reads the expert loads back once per step, for the metrics and the advice.
        const torch::Tensor loads = s_.rank == 0 ? StepReporter::hostExpertLoads(window) : torch::Tensor();
        const bool last = schedule_.finished(step + 1);
        if ((step + 1) % t.log_every == 0 || last) report_->publishStep(facts, window, loads);
        if (s_.rank == 0) report_->advise(facts, loads, mean_loss, window.rank_received);
        // Where weights or experts are divided among the ranks, every rank evaluates (the same
        // windows), gathering what it lacks as the evaluation runs.
        if ((s_.rank == 0 || layout_->modelDivided()) && t.eval_every > 0 && ((step + 1) % t.eval_every == 0 || last)) {
            EvalResult eval = evaluateModel(model_, *source_, cfg_, device_);
            report_->points({report_->point(step + 1, tokens_seen_, metric::kEvalLoss, eval.loss)});
        }
        if (SampleWriter::due(t, step + 1, last)) writeSamples(step + 1);
        if (t.checkpoint_every > 0 && (step + 1) % t.checkpoint_every == 0) saveCheckpoint(step + 1, last_loss_);
    }
    saveFinalCheckpoint(step);
    return finish(RunStatus::Completed, step);
}

RankResult RankTrainer::run() {
    std::string error;
    bool out_of_memory = false;
    bool failed_by_another_rank = false;
    try {
        return loop();
    } catch (const RankLost& e) {
        error = e.what();  // first-hand, whatever else was under way: a rank is gone
    } catch (const CollectiveAborted& e) {
        if (s_.control->stopRequested()) {
            // Another rank stopped at its boundary while this one waited in a collective: the
            // window is dropped here too, and the weights are those of the last full step. (A
            // sharded state cannot be gathered over aborted collectives; its stops are agreed
            // instead, so this is another rank's failure seen during a stop.)
            if (layout_ && layout_->stopRule() == StopRule::EndsAlone) saveFinalCheckpoint(current_step_);
            return resultAt(RunStatus::Stopped, current_step_);
        }
        error = std::string("stopped because another rank failed: ") + e.what();
        failed_by_another_rank = true;
    } catch (const c10::OutOfMemoryError& e) {
        out_of_memory = true;
        error = e.what_without_backtrace() + std::string("; ") + outOfMemoryAdvice(cfg_);
    } catch (const c10::Error& e) {
        error = e.what_without_backtrace();
    } catch (const std::exception& e) {
        error = e.what();
    }
    // Wake the other ranks out of any collective so they end within the timeout.
    for (Collectives* group : {s_.collectives, s_.expert_collectives, s_.replica_collectives})
        if (group) group->abort("rank " + std::to_string(s_.rank) + " failed: " + error);
    RankResult failed = resultAt(RunStatus::Failed, current_step_);  // the steps completed before the failure
    failed.error = "rank " + std::to_string(s_.rank) + ": " + error;
    failed.failed_by_another_rank = failed_by_another_rank;
    failed.out_of_memory = out_of_memory;
    return failed;
}

RankResult RankTrainer::resultAt(RunStatus status, int64_t steps) const {
    RankResult r;
    r.status = status;
    r.steps = steps;
    r.tokens = tokens_seen_;
    r.tokens_at_start = tokens_at_start_;
    r.final_loss = last_loss_;
    // The split in force at the end: an out-of-memory back-off may have changed it.
    r.micro_batch_size = cfg_.train.micro_batch_size;
    r.gradient_accumulation_steps = cfg_.train.gradient_accumulation_steps;
    r.peak_memory_bytes = run_peak_bytes_ > 0 ? run_peak_bytes_ : hostPeakBytes();
    r.host_peak_bytes = s_.host_memory ? s_.host_memory->peak.load() : 0;
    return r;
}

void RankTrainer::saveFinalCheckpoint(int64_t steps_done) {
    if (cfg_.train.final_checkpoint) saveCheckpoint(steps_done, last_loss_);
}

namespace {

// The whole state a checkpoint (or a sample's weights) is gathered into is host memory: on a GPU
// rank the gathers copy it there bucket by bucket, outside the device's budget. On CPU ranks the
// host is the device, and the copies would land in the rank's budgeted accounts
// (runtime.memory_limit_mb holds the device's and the host tier's), which a run that fits its
// training then overflows at its first checkpoint: they are counted in none, as on a GPU rank
// the planner's budget leaves them out.
class CheckpointCopies {
public:
    explicit CheckpointCopies(const torch::Device& device) {
        if (device.is_cpu()) scope_.emplace(nullptr);
    }

private:
    std::optional<ScopedMemoryAccount> scope_;
};

}  // namespace

void RankTrainer::saveCheckpoint(int64_t steps_done, double last_loss) {
    // The same decision on every rank (same steps, same folder), so a gather pairs up.
    if (s_.checkpoint_dir.empty() || steps_done <= last_checkpoint_step_ || steps_done == 0 || !layout_) return;
    CheckpointTensors whole;
    {
        CheckpointCopies copies(device_);
        whole = layout_->gatherCheckpoint();
    }
    // Every rank moves on together, whether or not rank 0's write then succeeds: a second call
    // for this step would gather on some ranks only.
    last_checkpoint_step_ = steps_done;
    if (s_.rank != 0) return;
    TrainerState state;
    state.step = steps_done;
    state.tokens = tokens_seen_;
    state.last_loss = last_loss;
    state.config_json = runConfigToJson(cfg_);
    state.batch_changes = schedule_.changes();
    if (adaptation_) state.batch_dwell_tokens = adaptation_->dwellTokens();
    state.noise_scale = report_->noiseState();
    try {
        const std::string path = writeCheckpoint(s_.checkpoint_dir, whole.model, whole.optimizer, state);
        pruneCheckpoints(s_.checkpoint_dir, cfg_.train.keep_checkpoints);
        event(steps_done, EventKind::Checkpoint, path);
    } catch (const std::exception& e) {
        // Training goes on; the previous checkpoint stays the newest valid one.
        event(steps_done, EventKind::CheckpointFailed, std::string("checkpoint not written: ") + e.what());
    }
}

void RankTrainer::writeSamples(int64_t steps_done) {
    NamedTensors gathered;
    if (layout_->modelDivided()) {
        CheckpointCopies copies(device_);
        gathered = layout_->gatherCheckpoint().model;  // collective
    }
    if (s_.rank != 0) return;
    try {
        if (!samples_) samples_ = std::make_unique<SampleWriter>(cfg_);
        const auto samples = layout_->modelDivided() ? samples_->write(gathered, device_, steps_done)
                                                     : samples_->write(model_, steps_done);
        for (const auto& sample : samples) event(steps_done, EventKind::Sample, sampleEventMessage(sample));
    } catch (const std::exception& e) {
        event(steps_done, EventKind::Warning, std::string("samples not written: ") + e.what());
    }
}

void RankTrainer::adaptBatch(int64_t step) {
    // Also after the last step: a run extended from its checkpoint then grows where the longer
    // run would have.
    if (!adaptation_) return;
    const auto growth = adaptation_->observe(schedule_.scheduledBatch(step), schedule_.globalBatch(step) * cfg_.train.seq_len,
                                             report_->criticalBatchSequences());
    if (!growth) return;
    schedule_.grow(step + 1, growth->to_batch);
    growth_reason_ = adaptation_->explain(*growth);
    reader_->dropAhead();  // the next window's first micro-batch was read for the old split
}

void RankTrainer::announceBatchChange(int64_t step) {
    if (!schedule_.varies() || step == 0 || step <= start_step_ || step <= last_batch_change_ ||
        schedule_.scheduledBatch(step) == schedule_.scheduledBatch(step - 1))
        return;
    last_batch_change_ = step;  // once, also when the step is redone after a back-off
    const int64_t m = cfg_.train.micro_batch_size;
    std::ostringstream change;
    change.precision(3);
    change << "global batch " << schedule_.scheduledBatch(step - 1) << " -> " << schedule_.scheduledBatch(step)
           << " sequences (gradient_accumulation_steps " << schedule_.accumulation(step - 1, m) << " -> "
           << schedule_.accumulation(step, m) << ", "
           << (schedule_.adapts() ? "adaptive: " + growth_reason_ : std::string("ramp"))
           << "), learning rate x" << schedule_.lrFactor(step) << " of the configured";
    event(step + 1, EventKind::BatchChange, change.str());
}

void RankTrainer::event(int64_t step, EventKind kind, const std::string& message) {
    if (report_) report_->event(step, kind, message);
}

RankResult runRank(const RankSetup& setup) {
    // Everything this rank allocates on the CPU, the model included, counts against its account.
    ScopedMemoryAccount account(setup.memory);
    try {
        RankTrainer trainer(setup);
        return trainer.run();
    } catch (const std::exception& e) {  // the model could not even be built
        setup.collectives->abort("rank " + std::to_string(setup.rank) + " failed: " + e.what());
        RankResult failed;
        failed.status = RunStatus::Failed;
        failed.error = e.what();
        return failed;
    }
}

}  // namespace trainbench
