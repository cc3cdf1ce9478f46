// PartLayout: a GradientLayout made of parameter parts, whose window hooks each part runs in
// turn (see ParameterPart). The layouts differ in their parts, their optimizer, their
// checkpoint and their rules; the window's calls are these.
#pragma once

#include <memory>
#include <vector>

#include "parallel/gradient_layout.h"
#include "parallel/parameter_part.h"

namespace trainbench {

class PartLayout : public GradientLayout {
public:
    void beginWindow() override;
    void beginMicroBatch(bool last) override;
    void endMicroBatch() override;
    void closeMicroBatches(int64_t micro_batches) override;
    void holdUnit(int64_t unit, bool backward) override;
    void releaseUnit(int64_t unit) override;
    void beginUnitMicroBatch(int64_t unit, bool last) override;
    void endUnitMicroBatch() override;
    void closeUnits() override;
    void dropWindow() override;
    void reduceWindow() override;
    int64_t bucketCount() const override { return parts_.front()->buckets().count(); }
    int64_t bucketsOverlapped() const override { return parts_.front()->buckets().launchedDuringBackward(); }
    OffloadTraffic offloadTraffic() const override;
    int64_t shardBytesGathered() const override;
    // Not where reductions run per micro-batch across ranks (train.sync_each_micro_batch with W > 1):
    // those cannot be abandoned halfway on one rank alone. Expert parallelism says no in any case.
    bool recoversFromOutOfMemory() const override;
    // Copies of the parameters; at stage 3 each part's shards gathered whole (collective).
    std::vector<torch::Tensor> wholeParameters() override;

protected:
    PartLayout(const LayoutSetup& setup, Transformer model);
    // The spec of a part over `group` at the config's stage and reduction settings.
    // `part_name` tells this part's offload file from the rank's other part's.
    PartSpec specFor(std::vector<size_t> indices, Collectives& group, int rank_in_group, bool may_overlap,
                     const std::string& part_name = "all") const;
    // The single-part layouts' beforeBackward: the idle experts told to the buckets when the
    // part reduces during this backward.
    void skipIdleExperts(bool last);
    // Every parameter of the model, in order: the single part of the replicated and sharded layouts.
    std::vector<size_t> allParameters() const;
    // The first part's squares per group over its group, when it is sharded (its slices' squares
    // all-reduced over the world).
    torch::Tensor shardedSquares(const std::vector<int>& group_of_param, int64_t groups) const;
    // The first part's share of a checkpoint: its moments when sharded, its weights (and the
    // model's buffers) at stage 3. Collective over the world.
    CheckpointTensors gatherFirstPart(const std::vector<std::string>& names);
    // The model's state dict with every weight held in bf16 on the device replaced by its fp32
    // master (collective: each part over its group; the masters land on each group's first rank,
    // elsewhere the device's weights stay).
    NamedTensors stateDictWithMasters(const std::vector<std::string>& names);

    LayoutSetup setup_;
    Transformer model_;
    std::vector<std::unique_ptr<ParameterPart>> parts_;  // the first one holds the dense parameters

private:
    bool open_ = false;   // a micro-batch begun and not ended (its forward or backward failed)
    int64_t ended_ = 0;   // micro-batches ended this window
};

}  // namespace trainbench
