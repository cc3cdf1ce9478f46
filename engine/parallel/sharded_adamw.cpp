// ShardedAdamW: AdamW over this rank's slice of every gradient bucket (ZeRO stages 1 to 3).
#include "parallel/sharded_adamw.h"

#include "parallel/fused_adamw.h"

#include <map>
#include <algorithm>
#include <optional>
#include <stdexcept>

namespace trainbench {
namespace {

// Two pinned slots of the widest of `numels` in `dtype` (`slots`), counted in `account`; the
// slabs they view, which the caller keeps.
std::unique_ptr<PinnedSlabs> twoSlots(const std::vector<int64_t>& numels, torch::ScalarType dtype,
                                      MemoryAccount* account, const char* what, torch::Tensor (&slots)[2]) {
    const int64_t widest = *std::max_element(numels.begin(), numels.end());
    const int64_t bytes = widest * int64_t(torch::elementSize(dtype));
    std::optional<ScopedMemoryAccount> host;
    if (account) host.emplace(account);
    PinnedSlabs::Options where;
    where.what = what;
    auto slabs = std::make_unique<PinnedSlabs>(std::vector<int64_t>{bytes, bytes}, where);
    for (auto& slot : slots) slot = slabs->take(widest, dtype);
    return slabs;
}

// Each view's norm squared, in fp64: the norm taken in the views' dtype, a bf16 sum's in fp32
// (in bf16 the norm itself would keep only about three significant digits).
torch::Tensor squaredNorms(const std::vector<torch::Tensor>& views) {
    std::optional<torch::ScalarType> wider;
    if (views.front().scalar_type() == torch::kBFloat16) wider = torch::kFloat32;
    return torch::stack(at::_foreach_norm(views, 2, wider)).to(torch::kFloat64).square();
}

}  // namespace

ShardedAdamW::ShardedAdamW(const std::vector<torch::Tensor>& params, const std::vector<bool>& decays,
                           GradientBuckets& buckets, int rank, Options options)
    : params_(params), decays_(decays), buckets_(buckets), rank_(rank), options_(options) {
    for (size_t b = 0; b < static_cast<size_t>(buckets_.count()); ++b) {
        const int64_t slice = buckets_.sliceNumel(b);
        const int64_t low = rank_ * slice, high = low + slice;
        for (const GradientBuckets::Member& m : buckets_.members(b)) {
            if (!params_[m.param].requires_grad()) continue;
            const int64_t first = std::max(low, m.offset), last = std::min(high, m.offset + m.numel);
            if (first >= last) continue;
            if (!params_[m.param].is_contiguous())
                throw std::logic_error("ShardedAdamW: a parameter is not contiguous");
            segments_.push_back({m.param, first - m.offset, first - low, last - first, b});
        }
    }
    if (buckets_.sumsFinishedOnDevice()) {
        segment_squares_.resize(segments_.size());
        buckets_.onSumFinished([this](size_t bucket, const torch::Tensor& sum) { noteFinishedSum(bucket, sum); });
    }
}

void ShardedAdamW::noteFinishedSum(size_t bucket, const torch::Tensor& sum) {
    std::vector<size_t> indices;
    std::vector<torch::Tensor> views;
    for (size_t i = 0; i < segments_.size(); ++i)
        if (segments_[i].bucket == bucket) {
            indices.push_back(i);
            views.push_back(sum.narrow(0, segments_[i].slice_offset, segments_[i].numel));
        }
    if (views.empty()) return;
    // Each view's norm is its own (the same bits as over every segment at once).
    const auto squares = squaredNorms(views);
    for (size_t j = 0; j < indices.size(); ++j) segment_squares_[indices[j]] = squares.narrow(0, int64_t(j), 1);
}

torch::TensorOptions ShardedAdamW::gradientOptions() const {
    // (bf16 slice sums: the gradients' own dtype still, that of the master and the moments' default)
    const auto& gradients = buckets_.gradientOptions();
    return buckets_.sliceSumsInFile() ? gradients : gradientSlice(0).options().dtype(gradients.dtype());
}

ShardedAdamW::~ShardedAdamW() {
    try {
        if (copies_)
            for (int slot : {0, 1}) copies_->waitHost(slot);
    } catch (...) {
        // A failed device: nothing left to wait for.
    }
}

void ShardedAdamW::attachWeights(ShardedWeights* weights) {
    if (weights && weights->shardsAreMaster() != options_.shards_are_master)
        throw std::logic_error("ShardedAdamW: the weights' shards are the master, or not, against Options::shards_are_master");
    weights_ = weights;
}

torch::Tensor ShardedAdamW::gradientSlice(size_t bucket) const { return buckets_.slice(bucket, rank_); }

torch::Tensor ShardedAdamW::sliceSquaredNorms(const std::vector<int>& group_of_param, int64_t groups) const {
    auto options = gradientOptions().dtype(torch::kFloat64);
    torch::Tensor out = torch::zeros({groups}, options);
    if (segments_.empty()) return out;
    // Each segment's group, on the device once (the groups of a run do not change).
    if (!segment_groups_.defined()) {
        std::vector<int64_t> index;
        for (const Segment& s : segments_) index.push_back(group_of_param[s.param]);
        segment_groups_ = torch::tensor(index, torch::kInt64).to(out.device());
    }
    // Each segment's norm in its own dtype, squared in fp64, summed into its group.
    torch::Tensor squares;
    if (buckets_.sumsFinishedOnDevice()) {
        // (taken as each bucket's sum was finished, on the device: the file is not read for them)
        for (const auto& square : segment_squares_)
            if (!square.defined()) throw std::logic_error("ShardedAdamW: a bucket's gradient sum was never finished");
        squares = torch::cat(segment_squares_);
    } else {
        std::vector<torch::Tensor> views;
        for (const Segment& s : segments_) views.push_back(gradientSlice(s.bucket).narrow(0, s.slice_offset, s.numel));
        squares = squaredNorms(views);
    }
    return out.index_add_(0, segment_groups_, squares);
}

bool ShardedAdamW::masterInStore() const { return options_.host_step && !options_.shards_are_master; }

torch::ScalarType ShardedAdamW::momentDtype() const {
    return trainbench::momentDtype(options_.moments, gradientOptions().dtype().toScalarType());
}

SliceStore& ShardedAdamW::moments() {
    if (!moments_) {
        const SliceHome home{options_.moments_file, options_.host_step, options_.host_memory, "the AdamW moments"};
        // The two moments in their storage dtype; the host step's master in the gradients'.
        std::vector<torch::ScalarType> parts(2, momentDtype());
        if (masterInStore()) parts.push_back(gradientOptions().dtype().toScalarType());
        moments_ = makeSliceStore(home, buckets_.sliceNumels(), parts, gradientOptions());
        master_ready_ = false;
    }
    return *moments_;
}

torch::Tensor ShardedAdamW::hostGradients(size_t bucket) {
    // Summed on the host as the micro-batches went: nothing to bring down.
    if (buckets_.sliceSumsOnHost()) return gradientSlice(bucket);
    const size_t bucket_count = static_cast<size_t>(buckets_.count());
    // Copied down as the last backward finished each bucket (GradientBuckets' CopiedDown), or
    // else brought down now into two pinned staging slices, bucket b + 1's while b steps.
    auto start = [&](size_t b) {
        if (b >= bucket_count || buckets_.landedSlice(b).defined()) return;
        if (!staging_slabs_)
            staging_slabs_ = twoSlots(buckets_.sliceNumels(), gradientSlice(0).scalar_type(), options_.host_memory,
                                      "the gradient slices' staging", staging_);
        const int64_t n = buckets_.sliceNumel(b);
        sideCopies().toHost(staging_[b % 2].narrow(0, 0, n), gradientSlice(b), int(b % 2));
    };
    if (bucket == 0) start(0);
    start(bucket + 1);  // its slot's last reader, bucket - 1, has stepped
    if (torch::Tensor landed = buckets_.landedSlice(bucket); landed.defined()) return landed;
    sideCopies().waitHost(int(bucket % 2));
    return staging_[bucket % 2].narrow(0, 0, buckets_.sliceNumel(bucket));
}

SideCopies& ShardedAdamW::sideCopies() {
    if (!copies_) copies_ = std::make_unique<SideCopies>(params_.front().device());
    return *copies_;
}

torch::Tensor ShardedAdamW::hostMaster(size_t bucket, const std::vector<torch::Tensor>& moments,
                                       const torch::Tensor& shard) {
    if (!masterInStore()) return shard;  // offload all: the shard, on the host, is the master
    const torch::Tensor& master = moments[2];
    if (master_ready_) return master;
    // The first step (or the first after a load): the device's weights as they are, padding and
    // the elements of frozen parameters zero at stages 1 and 2 as the all-gather sends them.
    if (weights_) {
        // (bf16 shards hold no master: captureMaster took it before they were rounded)
        if (shard.scalar_type() != master.scalar_type())
            throw std::logic_error("ShardedAdamW: the master of bf16 weights was not captured");
        master.copy_(shard);
    } else {
        master.zero_();
        for (const Segment& s : segments_)
            if (s.bucket == bucket)
                master.narrow(0, s.slice_offset, s.numel).copy_(params_[s.param].view({-1}).narrow(0, s.param_offset, s.numel));
    }
    return master;
}

void ShardedAdamW::step(double lr, double grad_divisor, Collectives& collectives) {
    torch::NoGradGuard no_grad;
    const size_t bucket_count = static_cast<size_t>(buckets_.count());
    SliceStore& store = moments();
    const bool host = options_.host_step;
    const bool first_on_host = host && !master_ready_;
    ++steps_;
    // One count for every segment (the kernel reads it, never writes it), where the kernel runs.
    const torch::Tensor step_count =
        segments_.empty() ? torch::Tensor()
                          : torch::full({}, double(steps_),
                                        torch::TensorOptions()
                                            .dtype(torch::kFloat32)
                                            .device(host ? torch::Device(torch::kCPU) : params_[segments_.front().param].device()));
    // Stages 1 and 2: the updated slices travel in whole-bucket buffers: at stage 1 the buckets
    // themselves (the gradient sums are spent, so each rank writes its new weights over its
    // slice; the buckets hold weights until the next window zeroes them), at stage 2 one fresh
    // buffer a bucket at a time. The all-gather fills in the other ranks' slices; every
    // parameter is read back.
    const bool one_at_a_time = buckets_.transient();
    std::vector<torch::Tensor> buffers(bucket_count);
    std::vector<std::shared_ptr<CollectiveWork>> gathers(bucket_count);
    auto unpack = [&](size_t b) {
        gathers[b]->wait();
        for (const GradientBuckets::Member& m : buckets_.members(b))
            if (params_[m.param].requires_grad()) params_[m.param].view({-1}).copy_(buffers[b].narrow(0, m.offset, m.numel));
        buffers[b] = torch::Tensor();
        gathers[b].reset();  // the call holds its buffers: kept, every bucket's would live to the end
    };
    auto gather = [&](size_t b) {
        const int64_t n = buckets_.sliceNumel(b);
        gathers[b] = collectives.allGatherAsync(buffers[b].narrow(0, rank_ * n, n), buffers[b]);
        if (one_at_a_time) unpack(b);
    };
    // With the slice sums on the host (stage 2) the device has no slice of its own to take the
    // update: it goes up straight into the bucket's gather buffer, gathered at once.
    // (so too with them in a file)
    const bool in_file = buckets_.sliceSumsInFile();
    // (and with bf16 slice sums, which cannot take the fp32 update)
    const bool narrow_sums = buckets_.sumDtype() != gradientOptions().dtype();
    const bool gather_while_stepping = host && !weights_ && (buckets_.sliceSumsOnHost() || in_file || narrow_sums);
    // Bucket by bucket, so the next bucket's moments are read while this one steps; the
    // arithmetic is elementwise, the same numbers in any grouping.
    for (size_t b = 0; b < bucket_count; ++b) {
        const std::vector<torch::Tensor> moments = store.acquire(b);
        const torch::Tensor &exp_avg = moments[0], &exp_avg_sq = moments[1];
        store.prefetch(b + 1);
        // Stage 3: the bucket's shard of the weights, where it lives (offload all: host memory or
        // offload_dir's file, the next bucket's read while this one steps).
        const torch::Tensor shard = weights_ ? weights_->acquireShard(b) : torch::Tensor();
        if (weights_) weights_->prefetchShard(b + 1);
        // The host step: the gradients come down, the kernel steps the master. In a file: read
        // back, the next bucket's read started.
        torch::Tensor grad_slice = in_file ? buckets_.acquireSum(b) : host ? hostGradients(b) : gradientSlice(b);
        if (in_file) buckets_.prefetchSum(b + 1);
        // bf16 slice sums (runtime.gradient_sum_dtype): widened, exactly, one bucket's at a time,
        // for the kernel, which reads gradients of its weights' dtype.
        if (grad_slice.scalar_type() != gradientOptions().dtype()) grad_slice = grad_slice.to(gradientOptions().dtype());
        const torch::Tensor master = host ? hostMaster(b, moments, shard) : torch::Tensor();
        bool stepped = false;
        for (bool decay : {true, false}) {
            std::vector<torch::Tensor> weights, grads, averages, squares, steps;
            for (const Segment& s : segments_) {
                if (s.bucket != b || decays_[s.param] != decay) continue;
                weights.push_back(host      ? master.narrow(0, s.slice_offset, s.numel)
                                  : weights_ ? shard.narrow(0, s.slice_offset, s.numel)
                                             : params_[s.param].view({-1}).narrow(0, s.param_offset, s.numel));
                grads.push_back(grad_slice.narrow(0, s.slice_offset, s.numel));
                averages.push_back(exp_avg.narrow(0, s.slice_offset, s.numel));
                squares.push_back(exp_avg_sq.narrow(0, s.slice_offset, s.numel));
                steps.push_back(step_count);
            }
            if (weights.empty()) continue;
            fusedAdamWUpdate(weights, grads, averages, squares, steps,
                             {lr, options_.beta1, options_.beta2, decay ? options_.weight_decay : 0.0, options_.eps},
                             grad_divisor);
            stepped = true;
        }
        // The updated slice goes up: at stages 1 and 2 over the gradient slice, spent now, which
        // the all-gather below sends (at stage 1 it is the bucket's own slice), or with the
        // slice sums on the host into the gather buffer; at stage 3 over the shard on the
        // device. Under offload all the shard stepped is the one kept.
        if (host && masterInStore()) {
            if (gather_while_stepping) {
                const int64_t n = buckets_.sliceNumel(b);
                buffers[b] = buckets_.gatherBuffer(b);
                sideCopies().toDevice(buffers[b].narrow(0, rank_ * n, n), master);
                sideCopies().joinCompute();
            } else if (weights_ && weights_->shardsOnHost()) {
                shard.copy_(master);  // the bf16 shards off the device, rounded where they are
            } else if (weights_ && shard.scalar_type() != master.scalar_type()) {
                uploadRounded(b, shard, master);
            } else {
                sideCopies().toDevice(weights_ ? shard : gradientSlice(b), master);
            }
        }
        if (in_file) buckets_.releaseSum(b);
        store.release(b, stepped || (first_on_host && masterInStore()));
        if (weights_) weights_->releaseShard(b, stepped);
        if (gather_while_stepping) gather(b);
    }
    if (host) {
        sideCopies().joinCompute();
        master_ready_ = true;
    }
    store.flush();
    if (weights_) {
        weights_->flushShards();
        return;
    }  // stage 3: the shards are the weights, gathered when next used
    if (gather_while_stepping) {
        for (size_t b = 0; b < bucket_count; ++b)
            if (gathers[b]) unpack(b);
        return;
    }
    for (size_t b = 0; b < bucket_count; ++b) {
        buffers[b] = buckets_.gatherBuffer(b);
        const int64_t n = buckets_.sliceNumel(b);
        torch::Tensor slice = buffers[b].narrow(0, rank_ * n, n);
        if (host) {
            // The master came up into the gradient slice (the same memory at stage 1).
            const torch::Tensor updated = gradientSlice(b);
            if (updated.data_ptr() != slice.data_ptr()) slice.copy_(updated);
        } else {
            slice.zero_();  // padding stays zero
            for (const Segment& s : segments_)
                if (s.bucket == b)
                    slice.narrow(0, s.slice_offset, s.numel).copy_(params_[s.param].view({-1}).narrow(0, s.param_offset, s.numel));
        }
        gather(b);
    }
    if (!one_at_a_time)
        for (size_t b = 0; b < bucket_count; ++b) unpack(b);
}

void ShardedAdamW::uploadRounded(size_t bucket, const torch::Tensor& shard, const torch::Tensor& master) {
    if (!rounded_slabs_)
        rounded_slabs_ = twoSlots(buckets_.sliceNumels(), shard.scalar_type(), options_.host_memory,
                                  "the rounded weights' staging", rounded_);
    // A slot is written again once its last copy (bucket b - 2's, or a gradient slice's after
    // it on the same stream) is done.
    const int slot = int(bucket % 2);
    sideCopies().waitHost(slot);
    torch::Tensor staged = rounded_[slot].narrow(0, 0, shard.numel());
    staged.copy_(master);
    sideCopies().toDevice(shard, staged, slot);
}

void ShardedAdamW::captureMaster() {
    if (!masterInStore()) return;
    torch::NoGradGuard no_grad;
    SliceStore& store = moments();
    master_ready_ = false;
    for (size_t b = 0; b < static_cast<size_t>(buckets_.count()); ++b) {
        const std::vector<torch::Tensor> parts = store.acquire(b);
        store.prefetch(b + 1);
        if (weights_) throw std::logic_error("ShardedAdamW: the master is captured before the shards are made");
        hostMaster(b, parts, torch::Tensor());
        store.release(b, true);
    }
    store.flush();
    master_ready_ = true;
}

std::vector<torch::Tensor> ShardedAdamW::gatherMaster(Collectives& collectives, const std::vector<bool>& wanted,
                                                      bool every_rank) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> whole(params_.size());
    if (!masterInStore() || !moments_ || !master_ready_) return {};
    SliceStore& store = *moments_;
    for (size_t b = 0; b < static_cast<size_t>(buckets_.count()); ++b) {
        const std::vector<torch::Tensor> parts = store.acquire(b);
        const torch::Tensor& master = parts[2];
        // Gathered where the collectives run (the rank's device), then kept on the host.
        const torch::Device device = params_.front().device();
        torch::Tensor all = torch::empty({buckets_.paddedNumel(b)}, master.options().device(device));
        collectives.allGatherAsync(master.to(device), all)->wait();
        store.release(b, false);
        if (!every_rank && rank_ != 0) continue;  // one host copy of the model, not one a rank
        bool any = false;
        for (const GradientBuckets::Member& m : buckets_.members(b)) any = any || wanted[m.param];
        if (!any) continue;
        all = all.cpu();
        for (const GradientBuckets::Member& m : buckets_.members(b)) {
            const auto& p = params_[m.param];
            if (wanted[m.param] && p.requires_grad()) whole[m.param] = all.narrow(0, m.offset, m.numel).view(p.sizes()).clone();
        }
    }
    return whole;
}

NamedTensors ShardedAdamW::gatherState(const std::vector<std::string>& names, Collectives& collectives) const {
    torch::NoGradGuard no_grad;
    NamedTensors state;
    if (steps_ == 0) return state;
    // One bucket at a time, and only rank 0 keeps (a host copy of) what it gathered: the whole
    // moments never sit on a device at once.
    SliceStore& store = *moments_;  // made by the first step (or a load with steps)
    for (size_t b = 0; b < static_cast<size_t>(buckets_.count()); ++b) {
        const std::vector<torch::Tensor> moments = store.acquire(b);
        const torch::Tensor &exp_avg = moments[0], &exp_avg_sq = moments[1];
        // On the rank's device, where the collectives run (the slice sums may be on the host).
        torch::Tensor averages = torch::empty({buckets_.paddedNumel(b)},
                                              exp_avg.options().dtype(momentDtype()).device(params_.front().device()));
        torch::Tensor squares = torch::empty_like(averages);
        collectives.allGatherAsync(exp_avg.to(averages.device()), averages)->wait();
        collectives.allGatherAsync(exp_avg_sq.to(averages.device()), squares)->wait();
        store.release(b, false);
        if (rank_ != 0) continue;
        averages = averages.cpu();
        squares = squares.cpu();
        for (const GradientBuckets::Member& m : buckets_.members(b)) {
            const auto& p = params_[m.param];
            if (!p.requires_grad()) continue;
            state.emplace_back(names[m.param] + ".exp_avg", averages.narrow(0, m.offset, m.numel).view(p.sizes()).clone());
            state.emplace_back(names[m.param] + ".exp_avg_sq", squares.narrow(0, m.offset, m.numel).view(p.sizes()).clone());
            state.emplace_back(names[m.param] + ".step", torch::tensor(steps_, torch::kInt64));
        }
    }
    return state;
}

void ShardedAdamW::loadState(const std::vector<std::string>& names, const NamedTensors& saved) {
    torch::NoGradGuard no_grad;
    std::map<std::string, torch::Tensor> by_name(saved.begin(), saved.end());
    steps_ = 0;
    moments_.reset();  // the master with it: the next step takes the weights as they are then
    // Every parameter steps together: any saved count is the count (also for a rank whose
    // slices hold no parameter, which must still take part in the gathers).
    for (const auto& [name, tensor] : saved)
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".step") == 0) steps_ = tensor.item<int64_t>();
    if (steps_ == 0) return;  // saved before the first step: nothing to take
    SliceStore& store = moments();
    for (size_t b = 0; b < static_cast<size_t>(buckets_.count()); ++b) {
        std::vector<torch::Tensor> moments = store.acquire(b);
        torch::Tensor &exp_avg = moments[0], &exp_avg_sq = moments[1];
        exp_avg.zero_();
        exp_avg_sq.zero_();
        for (const Segment& s : segments_) {
            if (s.bucket != b) continue;
            for (auto [suffix, target] : {std::pair{".exp_avg", &exp_avg}, std::pair{".exp_avg_sq", &exp_avg_sq}}) {
                auto found = by_name.find(names[s.param] + suffix);
                if (found == by_name.end()) continue;
                target->narrow(0, s.slice_offset, s.numel).copy_(found->second.reshape({-1}).narrow(0, s.param_offset, s.numel));
            }
        }
        store.release(b, true);
    }
    store.flush();
}

}  // namespace trainbench
