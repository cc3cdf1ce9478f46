#include "parallel/part_layout.h"

#include "offload/offload_dir.h"

namespace trainbench {

PartLayout::PartLayout(const LayoutSetup& setup, Transformer model) : setup_(setup), model_(std::move(model)) {}

PartSpec PartLayout::specFor(std::vector<size_t> indices, Collectives& group, int rank_in_group, bool may_overlap,
                             const std::string& part_name) const {
    const RunConfig& cfg = *setup_.config;
    PartSpec spec;
    spec.indices = std::move(indices);
    spec.group = &group;
    spec.rank_in_group = rank_in_group;
    spec.placement = setup_.placement;
    spec.sync_each_micro_batch = cfg.train.sync_each_micro_batch;
    // Sharded gradients (stages 2 and 3) reduce-scatter every micro-batch during its backward:
    // nothing to overlap.
    spec.overlap = may_overlap && !spec.placement.sharded.gradients && setup_.world_size > 1 &&
                   !cfg.train.sync_each_micro_batch && cfg.runtime.overlap_reduction;
    spec.bucket_bytes = setup_.bucket_bytes;
    spec.moments = optimizerDtype(cfg.runtime);
    spec.gradient_sums = gradientSumDtype(cfg.runtime);
    spec.first_bucket_bytes = setup_.first_bucket_bytes;
    if (spec.placement.moments != Tier::Device) spec.host_memory = setup_.host_memory;
    if (spec.placement.moments == Tier::File)
        spec.moments_file = offloadFilePath(cfg.runtime.offload_dir, setup_.rank, part_name);
    if (spec.placement.weights == Tier::File)
        spec.shard_file = offloadFilePath(cfg.runtime.offload_dir, setup_.rank, part_name, "weights");
    if (spec.placement.gradient_sums == Tier::File)
        spec.gradients_file = offloadFilePath(cfg.runtime.offload_dir, setup_.rank, part_name, "gradients");
    return spec;
}

GradientLayout::OffloadTraffic PartLayout::offloadTraffic() const {
    OffloadTraffic total;
    for (const auto& part : parts_) {
        total.read += part->offloadBytesRead();
        total.written += part->offloadBytesWritten();
        total.to_device += part->bytesToDevice();
        total.to_host += part->bytesToHost();
    }
    return total;
}

int64_t PartLayout::shardBytesGathered() const {
    int64_t total = 0;
    for (const auto& part : parts_) total += part->shardBytesGathered();
    return total;
}

std::vector<size_t> PartLayout::allParameters() const {
    std::vector<size_t> out(model_->parameters().size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = i;
    return out;
}

bool PartLayout::recoversFromOutOfMemory() const {
    return !(setup_.config->train.sync_each_micro_batch && setup_.world_size > 1);
}

std::vector<torch::Tensor> PartLayout::wholeParameters() {
    std::vector<torch::Tensor> out;
    if (!parts_.front()->weights()) {
        for (auto& p : model_->parameters()) out.push_back(p.detach().clone());
        for (auto& part : parts_) part->masterWeightsInto(out, /*every_rank=*/true);  // bf16 device weights: their master
        return out;
    }
    out.resize(model_->parameters().size());
    for (auto& part : parts_) part->wholeParametersInto(out);
    return out;
}

torch::Tensor PartLayout::shardedSquares(const std::vector<int>& group_of_param, int64_t groups) const {
    // Each rank holds the sums of its slices only: their squares, summed over the ranks.
    auto squares = parts_.front()->sliceSquares(group_of_param, groups, setup_.device);
    if (setup_.world_size > 1) {
        std::vector<torch::Tensor> list{squares};
        setup_.collectives->allReduce(list, ReduceOp::Sum);
    }
    return squares;
}

NamedTensors PartLayout::stateDictWithMasters(const std::vector<std::string>& names) {
    std::vector<torch::Tensor> master(names.size());
    for (auto& part : parts_) part->masterWeightsInto(master, /*every_rank=*/false);
    NamedTensors state = stateDict(model_);
    replaceNamed(state, names, master);
    return state;
}

CheckpointTensors PartLayout::gatherFirstPart(const std::vector<std::string>& names) {
    ParameterPart& part = *parts_.front();
    CheckpointTensors out;
    if (part.sharded()) out.optimizer = part.gatherMoments(names);
    if (part.weights()) {
        out.model = part.gatherWeights(names);
        for (const auto& item : model_->named_buffers()) out.model.emplace_back(item.key(), item.value());
    }
    return out;
}

void PartLayout::beginWindow() {
    for (auto& part : parts_) part->beginWindow();
    open_ = false;
    ended_ = 0;
}

void PartLayout::beginMicroBatch(bool last) {
    for (auto& part : parts_) part->beginMicroBatch(last);
    open_ = true;
}

void PartLayout::endMicroBatch() {
    for (auto& part : parts_) part->endMicroBatch();
    for (auto& part : parts_) part->syncMicroBatch();
    open_ = false;
    ++ended_;
}

void PartLayout::closeMicroBatches(int64_t micro_batches) {
    // Only the transient buckets and the weights' shards make calls here; the rest are no-ops.
    if (open_) {
        for (auto& part : parts_) part->endMicroBatch();
        open_ = false;
        ++ended_;
    }
    for (; ended_ < micro_batches; ++ended_) {
        for (auto& part : parts_) part->beginMicroBatch(/*last=*/false);
        for (auto& part : parts_) part->endMicroBatch();
    }
    for (auto& part : parts_) part->launchRemaining();
}

void PartLayout::holdUnit(int64_t unit, bool backward) {
    for (auto& part : parts_) part->holdUnit(unit, backward);
}

void PartLayout::releaseUnit(int64_t unit) {
    for (auto& part : parts_) part->releaseUnit(unit);
}

void PartLayout::beginUnitMicroBatch(int64_t unit, bool last) {
    for (auto& part : parts_) part->beginUnitMicroBatch(unit, last);
}

void PartLayout::endUnitMicroBatch() {
    for (auto& part : parts_) part->endUnitMicroBatch();
}

void PartLayout::closeUnits() {
    for (auto& part : parts_) part->launchRemaining();
}

void PartLayout::dropWindow() {
    for (auto& part : parts_) part->drop();
}

void PartLayout::reduceWindow() {
    for (auto& part : parts_) part->reduce();
}

void PartLayout::skipIdleExperts(bool last) {
    if (!parts_.front()->skipsIdleExperts(last)) return;
    std::vector<torch::Tensor> idle;
    for (auto& moe : model_->moeLayers())
        for (auto& p : moe->takeIdleExpertParameters()) idle.push_back(std::move(p));
    if (!idle.empty()) parts_.front()->buckets().noGradientComing(idle);
}

}  // namespace trainbench
