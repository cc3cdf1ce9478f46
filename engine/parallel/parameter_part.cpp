#include "parallel/parameter_part.h"

#include <unordered_map>

#include "model/product_weights.h"
#include "parallel/adamw_state.h"

namespace trainbench {

ParameterPart::ParameterPart(const PartSpec& spec, Transformer& model, const TrainConfig& train,
                             const NamedTensors* resumed_optimizer)
    : spec_(spec) {
    const std::vector<torch::Tensor> all = model->parameters();
    std::vector<torch::Tensor> params;
    for (size_t i : spec_.indices) params.push_back(all[i]);
    const Placement& place = spec_.placement;
    const bool sharded = place.sharded.moments;
    const int64_t shards = sharded ? spec_.group->worldSize() : 1;
    // bf16 device weights: the linear layers' trained weights (positions in spec_.indices),
    // their fp32 master only in the optimizer's store (each part's: under expert parallelism the
    // experts' over their replicas); at stage 3 their shards and gathered units too, in buckets
    // of their own, under offload all their shards off the device as well.
    std::vector<bool> bf16(params.size(), false);
    if (place.bf16_device_weights && sharded) {
        const std::vector<bool> product = productWeightMask(model);
        for (size_t j = 0; j < params.size(); ++j)
            if (product[spec_.indices[j]] && params[j].requires_grad()) {
                bf16[j] = true;
                bf16_weights_.push_back(j);
            }
    }
    std::vector<std::vector<size_t>> units;
    std::vector<bool> reads;
    if (place.sharded.gradients) {
        // The buckets are the model's units (this part's members of each), last unit first:
        // at stage 3 each unit's gradients go out at its backward boundary; at stage 2 a unit's
        // go out once its backward has made them all, so the whole gradients of about two units
        // exist at a time whatever the model's size (buckets of a fixed size would hold a model
        // smaller than one of them whole, above stage 1's peak).
        std::unordered_map<const void*, size_t> index;
        for (size_t j = 0; j < params.size(); ++j) index[params[j].unsafeGetTensorImpl()] = j;
        for (const auto& unit : model->units()) {
            units.emplace_back();
            for (const auto& p : unit)
                if (auto it = index.find(p.unsafeGetTensorImpl()); it != index.end()) units.back().push_back(it->second);
            reads.push_back(TransformerImpl::unitReadsWeightsInBackward(static_cast<int64_t>(reads.size())));
        }
        // The host step reads the sums on the host: copied down as the last backward finishes
        // each unit, or kept there when the device cannot hold them (each micro-batch's reduced
        // slices copied down and added there as their reduce-scatters finish; under the unit
        // order each unit's finished sums copied down once). Under the unit order they may wait
        // in offload_dir's file instead, each unit's written once finished.
        SliceSumOptions sums;
        sums.where = place.gradient_sums == Tier::File   ? SliceSums::InFile
                     : !place.host_step                   ? SliceSums::OnDevice
                     : place.gradient_sums != Tier::Host ? SliceSums::CopiedDown
                     : place.unit_order                   ? SliceSums::DownWhenFinished
                                                          : SliceSums::OnHost;
        sums.host_account = spec_.host_memory;
        sums.file = spec_.gradients_file;
        if (spec_.gradient_sums == GradientSumDtype::Bf16) sums.dtype = torch::kBFloat16;
        // Stage 3's buckets hold the weights too: bf16 ones in buckets of their own.
        const bool split = place.sharded.weights && !bf16_weights_.empty();
        buckets_ = std::make_unique<GradientBuckets>(params, ShardedWeights::bucketGroups(units, split ? bf16 : std::vector<bool>{}),
                                                     shards, /*transient=*/true, sums);
        // Each unit's buckets (the unit-major window reduces them unit by unit).
        std::vector<size_t> unit_of(params.size(), 0);
        for (size_t u = 0; u < units.size(); ++u)
            for (size_t j : units[u]) unit_of[j] = u;
        unit_buckets_.assign(units.size(), {0, 0});
        for (size_t b = 0; b < static_cast<size_t>(buckets_->count()); ++b) {
            auto& range = unit_buckets_[unit_of[buckets_->members(b).front().param]];
            if (range.second == 0) range.first = b;
            ++range.second;
        }
    } else {
        buckets_ = std::make_unique<GradientBuckets>(params, spec_.bucket_bytes, spec_.first_bucket_bytes, shards);
        // Stage 1's host step finds each bucket's reduced slice on the host, copied down as its
        // reduce-scatter finished (during the window's last backward when they overlap).
        // (One rank reduces nothing: its slices are read after the backward, through staging.)
        if (sharded && place.host_step && shards > 1) buckets_->copySlicesDown(spec_.host_memory);
    }
    if (sharded) {
        const std::vector<bool> all_decays = parameterDecays(model);
        std::vector<bool> decays;
        for (size_t i : spec_.indices) decays.push_back(all_decays[i]);
        ShardedAdamW::Options options;
        options.beta1 = train.beta1;
        options.beta2 = train.beta2;
        options.weight_decay = train.weight_decay;
        options.moments_file = spec_.moments_file;
        options.host_memory = spec_.host_memory;
        options.host_step = place.host_step;
        options.moments = spec_.moments;
        options.shards_are_master = place.sharded.weights && place.weightsOffDevice() && bf16_weights_.empty();
        optimizer_ = std::make_unique<ShardedAdamW>(params, decays, *buckets_, spec_.rank_in_group, options);
        if (resumed_optimizer) optimizer_->loadState(namesOf(parameterNames(model)), *resumed_optimizer);
        // bf16 device weights: the master first, from the fp32 weights; then the device keeps
        // their bf16 rounding, which is what autocast would have made of them at every use.
        if (!bf16_weights_.empty()) optimizer_->captureMaster();
    }
    if (place.sharded.weights) {
        ShardedWeights::Options where;
        where.shard_file = spec_.shard_file;
        where.host_memory = place.weightsOffDevice() ? spec_.host_memory : nullptr;
        where.on_host = place.weightsOffDevice();
        where.host_slabs = place.host_step;
        where.bf16 = bf16;  // the shards rounded as they are made
        weights_ = std::make_unique<ShardedWeights>(params, units, reads, *buckets_, *spec_.group, where);
        optimizer_->attachWeights(weights_.get());
    } else if (!bf16_weights_.empty()) {
        // Each such parameter's gradient stays fp32 (grad_dtype): autograd accumulates into the
        // buckets' fp32 views.
        torch::NoGradGuard no_grad;
        for (size_t j : bf16_weights_) {
            torch::Tensor p = params[j];
            const torch::Tensor grad = p.grad();
            p.set_data(p.detach().to(torch::kBFloat16));
            p.set_grad_dtype(torch::kFloat32);
            if (grad.defined()) p.mutable_grad() = grad;
        }
    }
}

void ParameterPart::masterWeightsInto(std::vector<torch::Tensor>& out, bool every_rank) {
    if (bf16_weights_.empty()) return;
    std::vector<bool> wanted(spec_.indices.size(), false);
    for (size_t j : bf16_weights_) wanted[j] = true;
    const std::vector<torch::Tensor> master = optimizer_->gatherMaster(*spec_.group, wanted, every_rank);
    for (size_t j : bf16_weights_) {
        const size_t i = spec_.indices[j];
        if (j < master.size() && master[j].defined())
            out[i] = master[j].to(out[i].defined() ? out[i].device() : master[j].device());
    }
}

std::vector<std::string> ParameterPart::namesOf(const std::vector<std::string>& names) const {
    std::vector<std::string> out;
    for (size_t i : spec_.indices) out.push_back(names[i]);
    return out;
}

void ParameterPart::beginWindow() {
    buckets_->zero();
    if (spec_.overlap) buckets_->beginOverlap(*spec_.group, sharded() ? BucketReduction::ReduceScatter : BucketReduction::AllReduce);
}

void ParameterPart::beginMicroBatch(bool last) {
    if (spec_.overlap && last) buckets_->armHooks();
    if (weights_) weights_->beginMicroBatch(last);
    else if (buckets_->transient()) buckets_->beginMicroBatch(*spec_.group, /*hooks=*/true, last);
}

void ParameterPart::endMicroBatch() {
    if (weights_) weights_->endMicroBatch();
    else if (buckets_->transient()) buckets_->endMicroBatch();
}

void ParameterPart::syncMicroBatch() {
    if (spec_.sync_each_micro_batch) buckets_->reduceIntoSums(*spec_.group);
}

void ParameterPart::launchRemaining() {
    if (spec_.overlap) buckets_->launchRemaining();
}

void ParameterPart::drop() {
    if (spec_.overlap) buckets_->finishOverlap(/*keep=*/false);
    if (spec_.sync_each_micro_batch) buckets_->dropSums();
    buckets_->zero();
}

void ParameterPart::reduce() {
    if (spec_.sync_each_micro_batch) buckets_->finishSums();
    else if (spec_.group->worldSize() == 1 || buckets_->transient()) {}  // the sums are in place
    else if (spec_.overlap) buckets_->finishOverlap();  // micro-batches 1..K-1 made no collective call
    else buckets_->reduce(*spec_.group, sharded() ? BucketReduction::ReduceScatter : BucketReduction::AllReduce);
}

void ParameterPart::holdUnit(int64_t unit, bool backward) {
    if (!weights_ || (backward && !weights_->backwardReadsWeights(unit))) return;
    weights_->holdUnit(unit, backward ? -1 : +1);
}

void ParameterPart::releaseUnit(int64_t unit) {
    if (weights_) weights_->releaseUnit(unit);
}

void ParameterPart::beginUnitMicroBatch(int64_t unit, bool last) {
    if (!buckets_->transient()) return;
    const auto [first, count] = unit_buckets_[unit];
    buckets_->beginRange(*spec_.group, first, count, last);
    unit_open_ = true;
}

void ParameterPart::endUnitMicroBatch() {
    if (!unit_open_) return;
    unit_open_ = false;
    buckets_->endMicroBatch();
}

bool ParameterPart::skipsIdleExperts(bool last) const {
    return (buckets_->transient() && !weights_) || (spec_.overlap && last);
}

torch::Tensor ParameterPart::sliceSquares(const std::vector<int>& group_of_param, int64_t groups,
                                          const torch::Device& device) const {
    std::vector<int> part_groups;
    for (size_t i : spec_.indices) part_groups.push_back(group_of_param[i]);
    return optimizer_->sliceSquaredNorms(part_groups, groups).to(device);
}

void ParameterPart::stepSlices(double lr, double grad_divisor) { optimizer_->step(lr, grad_divisor, *spec_.group); }

NamedTensors ParameterPart::gatherMoments(const std::vector<std::string>& names) const {
    return optimizer_->gatherState(namesOf(names), *spec_.group);
}

void replaceNamed(NamedTensors& state, const std::vector<std::string>& names,
                  const std::vector<torch::Tensor>& replacements) {
    std::unordered_map<std::string, torch::Tensor> by_name;
    for (size_t i = 0; i < names.size(); ++i)
        if (replacements[i].defined()) by_name.emplace(names[i], replacements[i]);
    for (auto& [name, tensor] : state)
        if (auto found = by_name.find(name); found != by_name.end()) tensor = found->second;
}

NamedTensors ParameterPart::gatherWeights(const std::vector<std::string>& names) {
    NamedTensors state = weights_->gatherState(namesOf(names));
    if (bf16_weights_.empty()) return state;
    // The bf16 weights' master in their place (the group's first rank holds both).
    std::vector<torch::Tensor> master(names.size());
    masterWeightsInto(master, /*every_rank=*/false);
    replaceNamed(state, names, master);
    return state;
}

void ParameterPart::wholeParametersInto(std::vector<torch::Tensor>& out) {
    auto whole = weights_->wholeParameters();
    for (size_t j = 0; j < whole.size(); ++j) out[spec_.indices[j]] = std::move(whole[j]);
    masterWeightsInto(out, /*every_rank=*/true);  // bf16 weights: their fp32 master
}

}  // namespace trainbench
