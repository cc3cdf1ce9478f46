// The rank loop. Loss maths (docs/design/accumulation.md): back-propagate raw token-loss sums S[r,k], count the
// targets N[r,k], reduce both across ranks once per window, and scale the summed gradient by 1/N
// with N = sum_{r,k} N[r,k] (inside the fused AdamW step, with the clipping); then move the MoE
// biases.
#include "train/rank_trainer.h"

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
#include "kernels/bf16_compute_scope.h"
#include "train/checkpoint.h"
#include "memory/host_to_device.h"
#include "train/fresh_gradient_norms.h"
#include "train/fused_adamw.h"
#include "trainbench/config_io.h"
#include "train/lr_schedule.h"
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

bool isNormOrBias(const std::string& name, const torch::Tensor& p) {
    return p.dim() < 2 || name.find("norm") != std::string::npos;
}

// AdamW with decoupled weight decay on matrices only (norms and biases are not decayed).
std::unique_ptr<torch::optim::AdamW> makeOptimizer(Transformer& model, const TrainConfig& t) {
    std::vector<torch::Tensor> decay, no_decay;
    for (auto& item : model->named_parameters())
        (isNormOrBias(item.key(), item.value()) ? no_decay : decay).push_back(item.value());
    auto options = torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(1e-8);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(t.weight_decay)));
    groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(0.0)));
    return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

// A backward that fails (out of memory) leaves the tasks it had queued, graph nodes and the
// gradients waiting for them (5 MB on the tiny preset), in autograd's ready queue for the
// device. Left alone they were released only during the next window, so the window retried
// after a back-off could run out again at the smaller split. One tiny backward on the same
// device releases them now: measured with the tracking allocator, the bytes held at the next
// window's start return exactly to the steady state (test_memory's
// outOfMemoryBacksOffAndKeepsTheLosses runs out in a backward and backs off once).
void releaseAbandonedBackward(const torch::Device& device) {
    auto x = torch::ones({1}, torch::TensorOptions(device).requires_grad(true));
    (x * 2).sum().backward();
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
      bf16_(!setup.fp64 && resolveComputeDtype(cfg_, cudaDeviceIndex(setup.device) >= 0) == "bf16") {
    model_->setRecomputation(cfg_.runtime.activation_checkpointing);
}

void RankTrainer::prepare() {
    // On a GPU the budget is a cap on this process's caching allocator (CPU ranks have theirs
    // in the tracking allocator's account).
    if (cudaDeviceIndex(s_.device) >= 0 && cfg_.runtime.memory_limit_mb > 0)
        limitCudaMemory(cudaDeviceIndex(s_.device), cfg_.runtime.memory_limit_mb * 1024 * 1024);
    source_ = openTokenSource(cfg_);
    initializeWeights(model_, static_cast<uint64_t>(cfg_.train.seed));
    // train.init_from: rank 0 reads the starting weights, the broadcast below hands them on.
    if (!cfg_.train.init_from.empty() && s_.resume_from.empty() && s_.rank == 0)
        loadIntoStateDict(stateDict(model_), readInitialWeights(cfg_.train.init_from, cfg_.model), cfg_.train.init_from);
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
        // model is still whole here, so any expert_parallel resumes any other.
        checkpoint = readCheckpoint(s_.resume_from);
        loadIntoStateDict(stateDict(model_), checkpoint->model, checkpoint->path + "/model.safetensors");
    }
    if (s_.expert_collectives) {
        // Expert parallelism: from here on this rank holds its own experts only.
        ExpertParallel ep;
        ep.group = s_.expert_collectives;
        ep.size = static_cast<int>(cfg_.runtime.expert_parallel);
        ep.rank = s_.rank % ep.size;
        ep.experts_per_rank = cfg_.model.n_routed_experts / ep.size;
        for (auto& moe : model_->moeLayers()) moe->distribute(ep);
    }
    optimizer_ = makeOptimizer(model_, cfg_.train);
    if (checkpoint) {
        // Saved whole by any stage and world size; a sharded rank takes its slices below, an
        // expert-parallel one the moments of its experts.
        if (cfg_.runtime.zero_stage >= 1) resumed_optimizer_ = checkpoint->optimizer;
        else restoreOptimizer(model_, *optimizer_, checkpoint->optimizer);
        start_step_ = checkpoint->state.step;
        tokens_seen_ = checkpoint->state.tokens;
        tokens_at_start_ = tokens_seen_;
        last_loss_ = checkpoint->state.last_loss;
        last_checkpoint_step_ = start_step_;
        resumed_noise_ = checkpoint->state.noise_scale;
        if (schedule_.adapts()) {
            schedule_.restore(checkpoint->state.batch_changes);
            adaptation_->restore(checkpoint->state.batch_dwell_tokens);
        }
    }
    params_ = model_->parameters();
    const bool sharded = cfg_.runtime.zero_stage >= 1;
    auto pick = [&](const std::vector<size_t>& part) {
        std::vector<torch::Tensor> out;
        for (size_t i : part) out.push_back(params_[i]);
        return out;
    };
    if (s_.expert_collectives) {
        // Expert parallelism: the replicated weights' gradients sum over every rank, the
        // experts' over the W / EP ranks that hold the same experts only; at stages 1-3 each
        // set's state is sharded over its own ranks.
        std::unordered_set<const void*> routed;
        for (auto& moe : model_->moeLayers())
            for (const auto& p : moe->routedExpertParameters()) routed.insert(p.unsafeGetTensorImpl());
        is_routed_expert_.assign(params_.size(), 0);
        for (size_t i = 0; i < params_.size(); ++i) {
            is_routed_expert_[i] = routed.count(params_[i].unsafeGetTensorImpl()) ? 1 : 0;
            (is_routed_expert_[i] ? expert_part_ : dense_part_).push_back(i);
        }
    } else {
        for (size_t i = 0; i < params_.size(); ++i) dense_part_.push_back(i);
    }
    if (cfg_.runtime.zero_stage >= 3) {
        // The buckets are the model's units, so each unit's gradients go out at its boundary.
        // Under expert parallelism each unit has two: its dense part's (over the world) and its
        // routed experts' (over the replicas), each indexed within its part.
        std::unordered_map<const void*, size_t> dense_index, expert_index;
        for (size_t j = 0; j < dense_part_.size(); ++j) dense_index[params_[dense_part_[j]].unsafeGetTensorImpl()] = j;
        for (size_t j = 0; j < expert_part_.size(); ++j) expert_index[params_[expert_part_[j]].unsafeGetTensorImpl()] = j;
        std::vector<std::vector<size_t>> dense_units, expert_units;
        std::vector<bool> reads;
        for (const auto& unit : model_->units()) {
            dense_units.emplace_back();
            expert_units.emplace_back();
            for (const auto& p : unit) {
                const void* impl = p.unsafeGetTensorImpl();
                if (auto it = dense_index.find(impl); it != dense_index.end()) dense_units.back().push_back(it->second);
                else expert_units.back().push_back(expert_index.at(impl));
            }
            reads.push_back(TransformerImpl::unitReadsWeightsInBackward(static_cast<int64_t>(reads.size())));
        }
        buckets_ = std::make_unique<GradientBuckets>(pick(dense_part_), ShardedWeights::bucketGroups(dense_units),
                                                     s_.world_size, /*transient=*/true);
        sharded_weights_ =
            std::make_unique<ShardedWeights>(pick(dense_part_), dense_units, reads, *buckets_, *s_.collectives);
        if (s_.expert_collectives) {
            expert_buckets_ = std::make_unique<GradientBuckets>(
                pick(expert_part_), ShardedWeights::bucketGroups(expert_units), s_.replica_collectives->worldSize(),
                /*transient=*/true);
            expert_weights_ = std::make_unique<ShardedWeights>(pick(expert_part_), expert_units, reads, *expert_buckets_,
                                                               *s_.replica_collectives);
            paired_residency_ = std::make_unique<PairedResidency>(*sharded_weights_, *expert_weights_);
            model_->setWeightResidency(paired_residency_.get());
        } else {
            model_->setWeightResidency(sharded_weights_.get());
        }
    } else if (s_.expert_collectives) {
        // Stage 2: both sets' buckets reduce-scattered every micro-batch, each over its ranks.
        const bool transient = cfg_.runtime.zero_stage >= 2;
        buckets_ = std::make_unique<GradientBuckets>(pick(dense_part_), s_.bucket_bytes, s_.first_bucket_bytes,
                                                     sharded ? s_.world_size : 1, transient);
        expert_buckets_ = std::make_unique<GradientBuckets>(pick(expert_part_), s_.bucket_bytes, s_.first_bucket_bytes,
                                                            sharded ? s_.replica_collectives->worldSize() : 1, transient);
    } else {
        buckets_ = std::make_unique<GradientBuckets>(params_, s_.bucket_bytes, s_.first_bucket_bytes,
                                                     sharded ? s_.world_size : 1,
                                                     /*transient=*/cfg_.runtime.zero_stage >= 2);
    }
    if (sharded) {
        std::vector<bool> decays;
        for (auto& item : model_->named_parameters()) decays.push_back(!isNormOrBias(item.key(), item.value()));
        const std::vector<std::string> names = parameterNames(model_);
        ShardedAdamW::Options options;
        options.beta1 = cfg_.train.beta1;
        options.beta2 = cfg_.train.beta2;
        options.weight_decay = cfg_.train.weight_decay;
        auto make = [&](const std::vector<size_t>& part, GradientBuckets& buckets, int rank, ShardedWeights* weights) {
            std::vector<torch::Tensor> params;
            std::vector<bool> part_decays;
            std::vector<std::string> part_names;
            for (size_t i : part) {
                params.push_back(params_[i]);
                part_decays.push_back(decays[i]);
                part_names.push_back(names[i]);
            }
            auto optimizer = std::make_unique<ShardedAdamW>(params, part_decays, buckets, rank, options, weights);
            if (!s_.resume_from.empty()) optimizer->loadState(part_names, resumed_optimizer_);
            return optimizer;
        };
        sharded_ = make(dense_part_, *buckets_, s_.rank, sharded_weights_.get());
        if (expert_buckets_)
            expert_sharded_ = make(expert_part_, *expert_buckets_, s_.replica_collectives->rank(), expert_weights_.get());
    }
    resumed_optimizer_.clear();
    group_of_param_ = noiseScaleGroupsOf(model_);
    group_index_ =
        torch::tensor(std::vector<int64_t>(group_of_param_.begin(), group_of_param_.end()), torch::kInt64).to(device_);
    if (expert_buckets_)  // once, like the group indices: the step's norms multiply by it
        routed_mask_ =
            torch::tensor(std::vector<double>(is_routed_expert_.begin(), is_routed_expert_.end()), torch::kFloat64).to(device_);
    group_present_.assign(noiseScaleGroups().size(), 0);
    for (int g : group_of_param_) group_present_[g] = 1;
    noise_groups_.assign(noiseScaleGroups().size(), NoiseScaleTracker());
    if (!resumed_noise_.empty()) {
        // Total, then each group: restored only when the layout of groups is the same.
        const size_t each = noise_.state().size();
        if (resumed_noise_.size() == each * (1 + noise_groups_.size())) {
            noise_.restore({resumed_noise_.begin(), resumed_noise_.begin() + each});
            for (size_t g = 0; g < noise_groups_.size(); ++g)
                noise_groups_[g].restore({resumed_noise_.begin() + each * (g + 1), resumed_noise_.begin() + each * (g + 2)});
        }
        resumed_noise_.clear();
    }
    moe_layers_ = model_->moeLayers();
    moe_indices_ = model_->moeLayerIndices();
    if (cfg_.runtime.dtype == "auto" && !s_.fp64)
        publishEvent(start_step_, EventKind::Precision, explainComputeDtype(cfg_, cudaDeviceIndex(s_.device) >= 0));
}

WindowOutcome RankTrainer::accumulateWindow(int64_t step, WindowResult& out) {
    const TrainConfig& t = cfg_.train;
    const int64_t calls_before = callsMade();
    buckets_->zero();
    if (expert_buckets_) expert_buckets_->zero();
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
        fresh_norms_ = std::make_unique<FreshGradientNorms>(params_, group_of_param_, device_,
                                                            expert_buckets_ ? is_routed_expert_ : std::vector<char>{});
    // Reading runs one micro-batch ahead on its own thread, across window boundaries too, so
    // the rank never waits on I/O (a source's reads are const and thread-safe). The reader
    // charges its buffers to this rank's memory account.
    auto launch = [this](int64_t at_step, int64_t k) {
        const int64_t m = cfg_.train.micro_batch_size, seq_len = cfg_.train.seq_len;
        const int64_t window = windowMicroBatches(at_step);
        const uint64_t seed = static_cast<uint64_t>(cfg_.train.seed);
        const int64_t first_sample = schedule_.firstSample(at_step);
        return std::async(std::launch::async, [this, first_sample, window, k, m, seq_len, seed] {
            ScopedMemoryAccount account(s_.memory);
            auto indices = sourceSampleIndices(sampleIndicesFrom(first_sample, s_.rank, k, m, window),
                                               source_->sampleCount(Split::Train, seq_len + 1), seed);
            return readMicroBatch(*source_, Split::Train, indices, seq_len);
        });
    };
    // A data file deleted or rewritten under the run ends it here, named, before a read of a
    // truncated mapping could kill the process.
    if (std::string problem = source_->fileProblem(); !problem.empty())
        throw std::runtime_error("data file " + problem + "; restore it and resume from the last checkpoint");
    std::future<MicroBatch> next = prefetched_step_ == step && prefetched_.valid() ? std::move(prefetched_) : launch(step, 0);
    prefetched_step_ = -1;
    // Per-micro-batch reductions cannot be abandoned halfway on one rank alone.
    // Nor can a micro-batch whose experts' tokens other ranks are exchanging with this one.
    const bool can_recover = !(t.sync_each_micro_batch && s_.world_size > 1) && !expert_buckets_;
    // Stages 2 and 3 reduce-scatter every micro-batch's buckets during its backward.
    const bool per_micro_batch = buckets_->transient();
    // Otherwise buckets reduce while the last backward runs (see GradientBuckets::beginOverlap).
    const bool overlap =
        !per_micro_batch && s_.world_size > 1 && !t.sync_each_micro_batch && cfg_.runtime.overlap_reduction;
    bool out_of_memory = false;
    const BucketReduction how = sharded_ ? BucketReduction::ReduceScatter : BucketReduction::AllReduce;
    if (overlap) buckets_->beginOverlap(*s_.collectives, how);
    if (fresh_norms_) fresh_norms_->beginWindow(K);
    // A sharded state cannot be gathered for a checkpoint once a stop has aborted the
    // collectives: there a stop is agreed like an out-of-memory window instead.
    bool stop_seen = false;
    int64_t reduced_micro_batches = 0;  // stages 2-3: the micro-batches whose buckets went out
    for (int64_t k = 0; k < K; ++k) {
        if (!s_.control->passBoundary()) {
            if (!sharded_ && !expert_buckets_) return WindowOutcome::Stopped;
            stop_seen = true;
            // Under expert parallelism the other ranks' exchanges need this rank's micro-batches:
            // the window runs to its end and is dropped there by all.
            if (!expert_buckets_) break;
        }
        if (step == s_.fail_at_step) throw std::runtime_error("injected failure at step " + std::to_string(step + 1));
        if (step == s_.stall_at_step) s_.control->waitForStop();
        MicroBatch batch = next.get();
        if (s_.edit_micro_batch) s_.edit_micro_batch(step, k, batch);
        if (k + 1 < K) {
            next = launch(step, k + 1);
        } else if (!schedule_.finished(step + 1)) {  // an adaptive growth drops it (adaptBatch)
            prefetched_ = launch(step + 1, 0);
            prefetched_step_ = step + 1;
        }
        if (overlap && k + 1 == K) buckets_->armHooks();
        if (per_micro_batch) beginMicroBatch();
        if (fresh_norms_) fresh_norms_->beginMicroBatch();
        try {
            LossParts parts = [&] {
                Bf16ComputeScope bf16(device_.type(), bf16_);  // the forward only; backward follows its graph
                return model_->loss(copyToDevice(batch.tokens, device_), copyToDevice(batch.targets, device_));
            }();
            // Experts no token reached get no gradient: buckets reduced during this backward need
            // not wait for them.
            if (!expert_buckets_ && ((per_micro_batch && !sharded_weights_) || (overlap && k + 1 == K))) {
                std::vector<torch::Tensor> idle;
                for (auto& moe : moe_layers_)
                    for (auto& p : moe->takeIdleExpertParameters()) idle.push_back(std::move(p));
                if (!idle.empty()) buckets_->noGradientComing(idle);
            }
            (parts.token_loss_sum + parts.aux_loss_sum).backward();
            if (fresh_norms_) fresh_norms_->endMicroBatch(parts.token_count);
            loss_sum += parts.token_loss_sum.detach().to(torch::kFloat64);
            aux_sum += parts.aux_loss_sum.detach().to(torch::kFloat64);
            count += parts.token_count;
        } catch (const c10::OutOfMemoryError&) {
            if (!can_recover) throw;
            out_of_memory = true;  // the graph of this micro-batch is gone with `parts`
            releaseAbandonedBackward(device_);
            break;
        }
        if (per_micro_batch) {
            endMicroBatch();
            ++reduced_micro_batches;
        }
        if (t.sync_each_micro_batch) {
            buckets_->reduceIntoSums(*s_.collectives);
            if (expert_buckets_) expert_buckets_->reduceIntoSums(*s_.replica_collectives);
        }
    }
    // Stages 2-3: a rank that left the window early (a stop, out of memory) still makes the
    // reduce-scatters of the micro-batches it did not run (of zeros), so that every rank's
    // calls pair up; the window is then dropped by all.
    if (per_micro_batch) {
        if (out_of_memory) {
            endMicroBatch();  // the micro-batch whose forward or backward failed was begun
            ++reduced_micro_batches;
        }
        for (; reduced_micro_batches < K; ++reduced_micro_batches) {
            beginMicroBatch();
            endMicroBatch();
        }
    }

    if (overlap) buckets_->launchRemaining();  // also on a rank that left the loop early
    // One reduction carries the window's loss sum, its target count, whether any rank ran out of
    // memory, every rank's peak bytes (each rank fills its own slot) and every layer's load. It
    // comes before the gradient reduction (deferred mode) so that an out-of-memory window
    // skips that; with overlap the buckets are already under way and are waited for, unused.
    const int64_t W = s_.world_size;
    WindowStatistics stats(device_);
    const auto loss_slot = stats.add(loss_sum);
    const auto tokens_slot = stats.add(count);
    const auto out_of_memory_slot = stats.add(out_of_memory ? 1.0 : 0.0);
    const auto stop_slot = stats.add(stop_seen ? 1.0 : 0.0);
    const auto peaks_slot = stats.perRank(W, s_.rank, double(windowPeakBytes()));
    // Under expert parallelism, every rank's routed rows received.
    WindowStatistics::Slot received_slot;
    if (expert_buckets_) {
        int64_t received = 0;
        for (auto& moe : moe_layers_) received += moe->takeReceived();
        received_slot = stats.perRank(W, s_.rank, double(received));
    }
    const auto aux_slot = stats.add(aux_sum);
    std::vector<WindowStatistics::Slot> load_slots;
    for (auto& moe : moe_layers_) load_slots.push_back(stats.add(moe->takeLoad()));
    // The micro-batches' fresh gradient sums: per noise group, then the micro-batches counted.
    WindowStatistics::Slot fresh_slot, routed_slot;
    if (fresh_norms_) fresh_slot = stats.add(fresh_norms_->windowSums());
    if (fresh_norms_ && fresh_norms_->hasRouted()) {
        // The routed experts' small batches: micro-batch k of every rank of the expert group, of
        // their summed token counts (docs/design/noise_scale.md section 2 over those unions). One small
        // all-reduce in the group; every rank of it then holds the group's sums, so each adds
        // 1/EP of them to the window's statistics.
        std::vector<torch::Tensor> list{fresh_norms_->routedWindow()};
        s_.expert_collectives->allReduce(list, ReduceOp::Sum);
        auto squared = list[0].narrow(0, 0, K), counts = list[0].narrow(0, K, K);
        const double share = 1.0 / double(cfg_.runtime.expert_parallel);
        routed_slot = stats.add(torch::stack({(squared / counts.clamp_min(1.0)).sum(), counts.gt(0).sum().to(torch::kFloat64)}) *
                                share);
    }
    // The step's one host synchronisation.
    stats.reduce(*s_.collectives);
    out.rank_peak_bytes.assign(W, 0);
    for (int64_t r = 0; r < W; ++r) out.rank_peak_bytes[r] = static_cast<int64_t>(stats.value(peaks_slot, r));
    if (stats.value(out_of_memory_slot) > 0 || stats.value(stop_slot) > 0) {
        if (overlap) buckets_->finishOverlap(/*keep=*/false);
        if (t.sync_each_micro_batch) buckets_->dropSums();
        buckets_->zero();
        if (expert_buckets_) {
            if (t.sync_each_micro_batch) expert_buckets_->dropSums();
            expert_buckets_->zero();
        }
        out.collectives = callsMade() - calls_before;
        return stats.value(stop_slot) > 0 ? WindowOutcome::StopAgreed : WindowOutcome::OutOfMemory;
    }
    if (t.sync_each_micro_batch) buckets_->finishSums();
    else if (W == 1 || per_micro_batch) {}  // one rank, or stages 2-3: the sums are in place
    else if (overlap) buckets_->finishOverlap();   // micro-batches 1..K-1 made no collective call
    else buckets_->reduce(*s_.collectives, how);
    if (expert_buckets_) {
        if (t.sync_each_micro_batch) expert_buckets_->finishSums();
        else if (per_micro_batch) {}  // stage 2: the slices' sums are in place
        else if (s_.replica_collectives->worldSize() > 1) expert_buckets_->reduce(*s_.replica_collectives, how);
    }

    out.loss_sum = stats.value(loss_slot);
    out.tokens = static_cast<int64_t>(stats.value(tokens_slot));
    out.rank_received.assign(received_slot.valid() ? W : 0, 0);
    for (int64_t r = 0; r < static_cast<int64_t>(out.rank_received.size()); ++r)
        out.rank_received[r] = static_cast<int64_t>(stats.value(received_slot, r));
    out.aux_loss_sum = stats.value(aux_slot);
    out.loads.clear();
    for (const auto& slot : load_slots) out.loads.push_back(stats.tensor(slot).to(torch::kInt64));
    // .grad holds the window's raw sums; the division by N happens as the fused AdamW step reads
    // them (applyUpdate), not in a pass of its own. The norm of the mean gradient is theirs / N.
    const std::vector<double> group_squares = groupGradSquares();
    double window_sq = 0;
    for (double v : group_squares) window_sq += v;
    out.grad_norm = out.tokens > 0 ? std::sqrt(window_sq) / double(out.tokens) : 0.0;
    // The noise scale's parts from the micro-batches' own gradients and the window's, total and
    // per group (docs/design/noise_scale.md section 2), before clipping.
    out.noise.reset();
    out.noise_groups.clear();
    if (fresh_norms_) {
        const int64_t groups = static_cast<int64_t>(group_squares.size());
        NoiseScaleSums total;
        total.tokens = double(out.tokens);
        total.micro_batches = static_cast<int64_t>(stats.value(fresh_slot, groups));
        total.window_sq = window_sq;
        // Under expert parallelism the routed experts are an estimator of their own (their own
        // small batches); |G|^2 and tr(Sigma) add over parameters, so their parts are added to the
        // experts group's and the total's.
        const bool routed = fresh_norms_->hasRouted();
        const int64_t experts_group = 2;
        total.window_sq = window_sq - routed_window_sq_;
        for (int64_t g = 0; g < groups; ++g) {
            NoiseScaleSums part = total;
            part.fresh_sq_per_token = stats.value(fresh_slot, g);
            part.window_sq = group_squares[g] - (routed && g == experts_group ? routed_window_sq_ : 0.0);
            total.fresh_sq_per_token += part.fresh_sq_per_token;
            out.noise_groups.push_back(noiseScaleParts(part));
        }
        out.noise = noiseScaleParts(total);
        if (routed) {
            NoiseScaleSums unions;
            unions.tokens = total.tokens;
            unions.fresh_sq_per_token = stats.value(routed_slot, 0);
            unions.micro_batches = std::llround(stats.value(routed_slot, 1));
            unions.window_sq = routed_window_sq_;
            const auto parts = noiseScaleParts(unions);
            auto add = [&](std::optional<NoiseScaleParts>& into) {
                if (!into || !parts) into.reset();  // one part without its small batches: no estimate
                else into = NoiseScaleParts{into->grad_sq + parts->grad_sq, into->trace + parts->trace};
            };
            add(out.noise);
            add(out.noise_groups[experts_group]);
        }
    }
    out.collectives = callsMade() - calls_before;
    return WindowOutcome::Complete;
}

int64_t RankTrainer::callsMade() const {
    int64_t calls = 0;
    for (const Collectives* group : {s_.collectives, s_.expert_collectives, s_.replica_collectives})
        if (group) calls += group->calls();
    return calls;
}

void RankTrainer::beginMicroBatch() {
    if (sharded_weights_) sharded_weights_->beginMicroBatch();
    else buckets_->beginMicroBatch(*s_.collectives);
    if (expert_weights_) expert_weights_->beginMicroBatch();
    else if (expert_buckets_ && expert_buckets_->transient()) expert_buckets_->beginMicroBatch(*s_.replica_collectives);
}

void RankTrainer::endMicroBatch() {
    if (sharded_weights_) sharded_weights_->endMicroBatch();
    else buckets_->endMicroBatch();
    if (expert_weights_) expert_weights_->endMicroBatch();
    else if (expert_buckets_ && expert_buckets_->transient()) expert_buckets_->endMicroBatch();
}

std::vector<torch::Tensor> RankTrainer::wholeParameters() {
    if (!sharded_weights_) {
        std::vector<torch::Tensor> out;
        for (auto& p : params_) out.push_back(p.detach().clone());
        return out;
    }
    // Each part's in its own order, put back in the model's.
    std::vector<torch::Tensor> out(params_.size());
    auto dense = sharded_weights_->wholeParameters();
    for (size_t j = 0; j < dense.size(); ++j) out[dense_part_[j]] = std::move(dense[j]);
    if (expert_weights_) {
        auto experts = expert_weights_->wholeParameters();
        for (size_t j = 0; j < experts.size(); ++j) out[expert_part_[j]] = std::move(experts[j]);
    }
    return out;
}

int64_t RankTrainer::windowPeakBytes() const {
    if (s_.memory) return s_.memory->peak.load();
    return cudaPeakAllocatedBytes(cudaDeviceIndex(s_.device));
}

int64_t RankTrainer::windowMicroBatches(int64_t step) const {
    return schedule_.accumulation(step, cfg_.train.micro_batch_size);
}

void RankTrainer::dropPrefetch() {
    if (prefetched_.valid()) prefetched_.wait();
    prefetched_ = {};
    prefetched_step_ = -1;
}

bool RankTrainer::backOffMicroBatch(int64_t step) {
    TrainConfig& t = cfg_.train;
    const int64_t old_m = t.micro_batch_size, old_k = t.gradient_accumulation_steps;
    int64_t m = old_m / 2;
    while (m > 1 && old_m % m != 0) --m;
    if (old_m <= 1) return false;
    dropPrefetch();  // it was read for the old split
    t.micro_batch_size = m;
    t.gradient_accumulation_steps = old_k * (old_m / m);
    std::ostringstream why;
    why << "out of memory at step " << step + 1 << ": micro_batch_size " << old_m << " -> " << m
        << ", gradient_accumulation_steps " << old_k << " -> " << t.gradient_accumulation_steps
        << " (global batch " << cfg_.globalBatch() << " kept); the step is redone";
    publishEvent(step, EventKind::OutOfMemoryBackoff, why.str());
    return true;
}

std::vector<double> RankTrainer::groupGradSquares() {
    const int64_t groups = static_cast<int64_t>(noiseScaleGroups().size());
    torch::Tensor squares, routed_sq;  // routed_sq: expert parallelism, the routed experts' share
    if (sharded_) {
        // Each rank holds the sums of its slices only: their squares, summed over the ranks.
        auto groupsOf = [&](const std::vector<size_t>& part) {
            std::vector<int> out;
            for (size_t i : part) out.push_back(group_of_param_[i]);
            return out;
        };
        squares = sharded_->sliceSquaredNorms(groupsOf(dense_part_), groups).to(device_);
        if (s_.world_size > 1) {
            std::vector<torch::Tensor> list{squares};
            s_.collectives->allReduce(list, ReduceOp::Sum);
        }
        if (expert_sharded_) {
            // The experts' slices: over the ranks holding the same experts, then over the group.
            std::vector<torch::Tensor> list{expert_sharded_->sliceSquaredNorms(groupsOf(expert_part_), groups).to(device_)};
            s_.replica_collectives->allReduce(list, ReduceOp::Sum);
            s_.expert_collectives->allReduce(list, ReduceOp::Sum);
            squares = squares + list[0];
            routed_sq = list[0].sum().view({1});
        }
    } else {
        // Each tensor's norm in its own dtype (asking for fp64 would first copy every gradient
        // to doubles), then their squares summed per group in fp64.
        std::vector<torch::Tensor> grads;
        for (auto& p : params_) grads.push_back(p.grad());
        auto per_param = torch::stack(at::_foreach_norm(grads, 2)).to(torch::kFloat64).square();
        if (expert_buckets_) {
            // Each rank of an expert group holds other experts: theirs summed over the group.
            const torch::Tensor& routed = routed_mask_;
            auto expert_part = torch::zeros({groups}, per_param.options()).index_add_(0, group_index_, per_param * routed);
            std::vector<torch::Tensor> list{expert_part};
            s_.expert_collectives->allReduce(list, ReduceOp::Sum);
            squares = torch::zeros({groups}, per_param.options()).index_add_(0, group_index_, per_param * (1 - routed));
            squares += expert_part;
            routed_sq = expert_part.sum().view({1});
        } else {
            squares = torch::zeros({groups}, per_param.options()).index_add_(0, group_index_, per_param);
        }
    }
    // One copy to the host, the routed share with it.
    auto host = (routed_sq.defined() ? torch::cat({squares, routed_sq}) : squares).cpu();
    routed_window_sq_ = routed_sq.defined() ? host.data_ptr<double>()[groups] : 0.0;
    return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + groups);
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
    for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    if (sharded_) {
        sharded_->step(lr, grad_divisor, *s_.collectives);
        if (expert_sharded_) expert_sharded_->step(lr, grad_divisor, *s_.replica_collectives);
    } else {
        fusedAdamWStep(*optimizer_, grad_divisor);
    }
    for (size_t i = 0; i < moe_layers_.size(); ++i) moe_layers_[i]->updateBias(w.loads[i], cfg_.model.bias_update_speed);
    return lr;
}

RankResult RankTrainer::loop() {
    prepare();
    // Why the loop ended, where a failure says so; the rest comes from resultAt.
    bool out_of_memory = false;
    std::string error;
    if (source_->entropyFloor() >= 0 && start_step_ == 0) publishPoints({point(0, metric::kEntropyFloor, source_->entropyFloor())});
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
        if (schedule_.varies() && step > 0 && step > start_step_ && step > last_batch_change_ &&
            schedule_.scheduledBatch(step) != schedule_.scheduledBatch(step - 1)) {
            last_batch_change_ = step;  // once, also when the step is redone after a back-off
            const int64_t m = cfg_.train.micro_batch_size;
            std::ostringstream change;
            change.precision(3);
            change << "global batch " << schedule_.scheduledBatch(step - 1) << " -> " << schedule_.scheduledBatch(step)
                   << " sequences (gradient_accumulation_steps " << schedule_.accumulation(step - 1, m) << " -> "
                   << schedule_.accumulation(step, m) << ", "
                   << (schedule_.adapts() ? "adaptive: " + growth_reason_ : std::string("ramp"))
                   << "), learning rate x" << schedule_.lrFactor(step) << " of the configured";
            publishEvent(step + 1, EventKind::BatchChange, change.str());
        }
        const WindowOutcome outcome = accumulateWindow(step, window);
        if (outcome == WindowOutcome::Stopped) {
            // Ranks that already passed this boundary wait in a collective: release them.
            s_.collectives->abort("stop requested");
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
            publishEvent(step + 1, EventKind::Warning,
                         "step " + std::to_string(step + 1) + " has no counted target tokens; update skipped");
            continue;
        }
        const double mean_loss = window.loss_sum / double(window.tokens);
        // Loss and norm are global, so every rank takes the same decision here.
        if (!std::isfinite(mean_loss) || !std::isfinite(window.grad_norm)) {
            ++bad_steps;
            std::ostringstream why;
            why << "step " << step + 1 << " skipped: loss " << mean_loss << ", grad norm " << window.grad_norm;
            publishEvent(step + 1, EventKind::SkippedStep, why.str());
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
        observeNoise(window);
        adaptBatch(step);
        const double step_time = secondsSince(step_start);
        tokens_per_s = double(window.tokens) / step_time;
        if (s_.rank == 0) {
            s_.completed_steps->store(step + 1);
            if (s_.completed_tokens) s_.completed_tokens->store(schedule_.tokensBefore(step + 1));
        }
        // Rank 0 reads the expert loads back once per step, for the metrics and the advice.
        const torch::Tensor loads = s_.rank == 0 ? hostExpertLoads(window) : torch::Tensor();
        const bool last = schedule_.finished(step + 1);
        if ((step + 1) % t.log_every == 0 || last)
            publishStep(step + 1, window, loads, lr, tokens_per_s, step_time);
        if (s_.rank == 0) adviseAfterStep(step + 1, loads, mean_loss, tokens_per_s, window.rank_received);
        // Sharded weights are gathered unit by unit as the evaluation runs: every rank evaluates.
        // So are experts divided among ranks: every rank evaluates (the same windows).
        if ((s_.rank == 0 || sharded_weights_ || expert_buckets_) && t.eval_every > 0 &&
            ((step + 1) % t.eval_every == 0 || last)) {
            EvalResult eval = evaluateModel(model_, *source_, cfg_, device_);
            publishPoints({point(step + 1, metric::kEvalLoss, eval.loss)});
        }
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
    } catch (const CollectiveAborted& e) {
        if (s_.control->stopRequested()) {
            // Another rank stopped at its boundary while this one waited in a collective: the
            // window is dropped here too, and the weights are those of the last full step. (A
            // sharded state cannot be gathered over aborted collectives; its stops are agreed
            // instead, so this is another rank's failure seen during a stop.)
            if (!sharded_ && !expert_buckets_) saveFinalCheckpoint(current_step_);
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
    return r;
}

void RankTrainer::saveFinalCheckpoint(int64_t steps_done) {
    if (cfg_.train.final_checkpoint) saveCheckpoint(steps_done, last_loss_);
}

void RankTrainer::saveCheckpoint(int64_t steps_done, double last_loss) {
    // The same decision on every rank (same steps, same folder), so a gather pairs up.
    if (s_.checkpoint_dir.empty() || steps_done <= last_checkpoint_step_ || steps_done == 0) return;
    NamedTensors optimizer_state, model_state;
    auto namesOf = [&](const std::vector<size_t>& part) {
        const std::vector<std::string> names = parameterNames(model_);
        std::vector<std::string> out;
        for (size_t i : part) out.push_back(names[i]);
        return out;
    };
    if (sharded_) optimizer_state = sharded_->gatherState(namesOf(dense_part_), *s_.collectives);
    if (sharded_weights_) {
        model_state = sharded_weights_->gatherState(namesOf(dense_part_));
        for (const auto& item : model_->named_buffers()) model_state.emplace_back(item.key(), item.value());
    }
    // Expert parallelism: rank 0's expert group gathers every expert, weights and moments.
    const bool experts_divided = expert_buckets_ != nullptr;
    if (experts_divided) {
        // At stage 1 the ranks holding the same experts first gather their moments (the first
        // of them, ranks 0 to EP - 1, gets them).
        // At stage 3 their weights too, then the expert group gathers those.
        NamedTensors expert_moments, expert_weights;
        if (expert_sharded_) expert_moments = expert_sharded_->gatherState(namesOf(expert_part_), *s_.replica_collectives);
        if (expert_weights_) expert_weights = expert_weights_->gatherState(namesOf(expert_part_));
        if (s_.rank < cfg_.runtime.expert_parallel) {
            if (expert_weights_) {
                for (auto& item : gatherExperts(expert_weights)) model_state.push_back(std::move(item));
            } else {
                model_state = gatherExperts(stateDict(model_));
            }
            if (expert_sharded_) {
                for (auto& item : gatherExperts(expert_moments)) optimizer_state.push_back(std::move(item));
            } else {
                optimizer_state = gatherExperts(adamWState(model_, *optimizer_));
            }
        }
    }
    // Every rank moves on together, whether or not rank 0's write then succeeds: a second call
    // for this step would gather on some ranks only.
    last_checkpoint_step_ = steps_done;
    if (s_.rank != 0) return;
    if (!sharded_ && !experts_divided) optimizer_state = adamWState(model_, *optimizer_);
    TrainerState state;
    state.step = steps_done;
    state.tokens = tokens_seen_;
    state.last_loss = last_loss;
    state.config_json = runConfigToJson(cfg_);
    state.batch_changes = schedule_.changes();
    if (adaptation_) state.batch_dwell_tokens = adaptation_->dwellTokens();
    if (noise_.ready()) {
        state.noise_scale = noise_.state();
        for (const auto& group : noise_groups_)
            for (double v : group.state()) state.noise_scale.push_back(v);
    }
    try {
        const std::string path = sharded_weights_ || experts_divided
                                     ? writeCheckpoint(s_.checkpoint_dir, model_state, optimizer_state, state)
                                     : writeCheckpoint(s_.checkpoint_dir, model_, optimizer_state, state);
        pruneCheckpoints(s_.checkpoint_dir, cfg_.train.keep_checkpoints);
        publishEvent(steps_done, EventKind::Checkpoint, path);
    } catch (const std::exception& e) {
        // Training goes on; the previous checkpoint stays the newest valid one.
        publishEvent(steps_done, EventKind::CheckpointFailed, std::string("checkpoint not written: ") + e.what());
    }
}

NamedTensors RankTrainer::gatherExperts(const NamedTensors& local) {
    const int EP = static_cast<int>(cfg_.runtime.expert_parallel);
    const int64_t per_rank = cfg_.model.n_routed_experts / EP, first = (s_.rank % EP) * per_rank;
    NamedTensors whole;
    for (const auto& [name, tensor] : local) {
        // "...experts.<e>...." names a routed expert; everything else is the same on every rank.
        const size_t at = name.find(".experts.");
        if (at == std::string::npos) {
            whole.emplace_back(name, tensor);
            continue;
        }
        const size_t digits = at + 9, end = name.find('.', digits);
        const int64_t local_index = std::stoll(name.substr(digits, end - digits)) - first;
        auto flat = tensor.detach().reshape({-1}).contiguous();
        auto all = torch::empty({EP * flat.numel()}, flat.options());
        s_.expert_collectives->allGatherAsync(flat, all)->wait();
        for (int r = 0; r < EP; ++r)
            whole.emplace_back(name.substr(0, digits) + std::to_string(r * per_rank + local_index) + name.substr(end),
                               all.narrow(0, r * flat.numel(), flat.numel()).view(tensor.sizes()));
    }
    return whole;
}

torch::Tensor RankTrainer::hostExpertLoads(const WindowResult& w) const {
    if (w.loads.empty()) return {};
    // One copy to the host for every layer, not a synchronisation per layer.
    return torch::stack(w.loads).to(torch::kCPU, torch::kFloat64).contiguous();
}

void RankTrainer::adviseAfterStep(int64_t step, const torch::Tensor& loads, double loss, double tokens_per_s,
                                  const std::vector<int64_t>& rank_received) {
    if (auto message = spikes_.observe(step, loss)) publishEvent(step, EventKind::Advice, *message);
    // An adaptive batch follows the estimate itself: its changes are the batch_change events.
    if (noise_.ready() && !adaptation_) {
        const int64_t per_step = cfg_.train.micro_batch_size * s_.world_size;
        // Against the batch of the step just taken (a ramp's, not the final one).
        const int64_t k = windowMicroBatches(step - 1);
        if (auto message = critical_batch_.observe(step, noise_.criticalBatchTokens() / tokens_per_sequence_,
                                                   noise_.relativeError(), k * per_step, k, per_step))
            publishEvent(step, EventKind::Advice, *message);
    }
    if (loads.defined()) {
        const int64_t experts = loads.size(1);
        for (int64_t i = 0; i < loads.size(0); ++i) {
            const double* row = loads.data_ptr<double>() + i * experts;
            std::vector<double> values(row, row + experts);
            if (auto message = imbalance_.observe(step, moe_indices_[i], values)) publishEvent(step, EventKind::Advice, *message);
        }
    }
    if (!rank_received.empty())
        if (auto message = rank_imbalance_.observe(step, rank_received, cfg_.runtime.expert_parallel,
                                                   cfg_.model.n_routed_experts))
            publishEvent(step, EventKind::Advice, *message);
    if (!throughput_ && s_.explored_best && step > start_step_ + 1)  // the first step is warm-up
        throughput_.emplace(*s_.explored_best, cfg_.train.micro_batch_size);
    if (throughput_)
        if (auto message = throughput_->observe(step, tokens_per_s)) publishEvent(step, EventKind::Advice, *message);
}

MetricPoint RankTrainer::point(int64_t step, const std::string& key, double value) const {
    return MetricPoint{step, tokens_seen_, secondsSince(s_.started), key, value};
}

void RankTrainer::publishStep(int64_t step, const WindowResult& w, const torch::Tensor& loads, double lr,
                              double tokens_per_s, double step_time) {
    if (s_.rank != 0) return;
    std::vector<MetricPoint> points = {
        point(step, metric::kLoss, w.loss_sum / double(w.tokens)),
        point(step, metric::kGradNorm, w.grad_norm),
        point(step, metric::kLearningRate, lr),
        point(step, metric::kTokens, double(tokens_seen_)),
        point(step, metric::kTokensPerSecond, tokens_per_s),
        point(step, metric::kStepTime, step_time),
        point(step, metric::kCollectives, double(w.collectives)),
        point(step, metric::kGlobalBatch, double(cfg_.train.micro_batch_size * windowMicroBatches(step - 1) * s_.world_size)),
    };
    if (!w.loads.empty()) points.push_back(point(step, metric::kAuxLoss, w.aux_loss_sum / double(w.tokens)));
    if (w.noise && noise_.ready()) {
        // Raw parts (a user may smooth them differently), their averages, and the critical batch
        // from the ratio of the averages, in tokens and in sequences of this window.
        const double critical = noise_.criticalBatchTokens();
        points.push_back(point(step, metric::kNoiseGradSq, w.noise->grad_sq));
        points.push_back(point(step, metric::kNoiseTrace, w.noise->trace));
        points.push_back(point(step, metric::kNoiseGradSqAverage, noise_.gradSq()));
        points.push_back(point(step, metric::kNoiseTraceAverage, noise_.trace()));
        points.push_back(point(step, metric::kCriticalBatchTokens, critical));
        points.push_back(point(step, metric::kCriticalBatchSequences, critical / tokens_per_sequence_));
        const double error = noise_.relativeError();
        if (std::isfinite(error)) points.push_back(point(step, metric::kCriticalBatchRelativeError, error));
        for (size_t g = 0; g < w.noise_groups.size(); ++g) {
            if (!group_present_[g] || !w.noise_groups[g]) continue;
            const std::string& group = noiseScaleGroups()[g];
            points.push_back(point(step, metric::noiseGroupKey(group, "grad_sq"), w.noise_groups[g]->grad_sq));
            points.push_back(point(step, metric::noiseGroupKey(group, "trace"), w.noise_groups[g]->trace));
            if (noise_groups_[g].ready())
                points.push_back(point(step, metric::noiseGroupKey(group, "critical_batch_tokens"),
                                       noise_groups_[g].criticalBatchTokens()));
        }
    }
    // Expert parallelism: the time in the exchanges and the routed rows each rank received.
    if (s_.expert_collectives) {
        const double seconds = s_.expert_collectives->allToAllSeconds();
        points.push_back(point(step, metric::kAllToAllTime, seconds - all_to_all_seconds_));
        all_to_all_seconds_ = seconds;
    }
    for (size_t r = 0; r < w.rank_received.size(); ++r)
        points.push_back(point(step, metric::rankReceivedKey(int(r)), double(w.rank_received[r])));
    // Each rank's most bytes held during the window's forward and backward passes.
    for (size_t r = 0; r < w.rank_peak_bytes.size(); ++r)
        if (w.rank_peak_bytes[r] > 0)
            points.push_back(point(step, metric::memoryKey(s_.device, int(r), metric::kPeakBytes), double(w.rank_peak_bytes[r])));
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
            const int layer = static_cast<int>(moe_indices_[i]);
            const double* row = values + i * experts;
            double sum = 0, max = 0;
            for (int64_t e = 0; e < experts; ++e) sum += row[e], max = std::max(max, row[e]);
            const double mean = sum / double(experts);
            points.push_back(point(step, metric::loadMaxOverMeanKey(layer), mean > 0 ? max / mean : 0.0));
            if (per_expert)
                for (int64_t e = 0; e < experts; ++e)
                    points.push_back(point(step, metric::expertTokensKey(layer, int(e)), row[e]));
        }
    }
    publishPoints(std::move(points));
}

void RankTrainer::observeNoise(const WindowResult& w) {
    if (!w.noise) return;
    const double sequences = double(cfg_.train.micro_batch_size * windowMicroBatches(current_step_) * s_.world_size);
    if (sequences > 0 && w.tokens > 0) tokens_per_sequence_ = double(w.tokens) / sequences;
    noise_.observe(*w.noise, double(w.tokens));
    for (size_t g = 0; g < w.noise_groups.size() && g < noise_groups_.size(); ++g)
        if (w.noise_groups[g]) noise_groups_[g].observe(*w.noise_groups[g], double(w.tokens));
}

void RankTrainer::adaptBatch(int64_t step) {
    // Also after the last step: a run extended from its checkpoint then grows where the longer
    // run would have.
    if (!adaptation_) return;
    const double critical =
        noise_.ready() ? noise_.criticalBatchTokens() / tokens_per_sequence_ : std::numeric_limits<double>::quiet_NaN();
    const auto growth =
        adaptation_->observe(schedule_.scheduledBatch(step), schedule_.globalBatch(step) * cfg_.train.seq_len, critical);
    if (!growth) return;
    schedule_.grow(step + 1, growth->to_batch);
    growth_reason_ = adaptation_->explain(*growth);
    dropPrefetch();  // the next window's first micro-batch was read for the old split
}

void RankTrainer::publishPoints(std::vector<MetricPoint> points) {
    if (s_.bus && s_.rank == 0) s_.bus->publish(std::move(points));
}

void RankTrainer::publishEvent(int64_t step, EventKind kind, const std::string& message) {
    if (s_.bus && s_.rank == 0) s_.bus->publish(RunEvent{step, secondsSince(s_.started), eventKindName(kind), message});
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
