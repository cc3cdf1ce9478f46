// GradientLayout: where a rank's gradients, optimizer state and weights live, behind one seam.
// The window (train/rank_trainer.cpp) calls the same hooks whatever the layout; replicated
// data parallelism, the sharded stages (ZeRO 1-3) and expert parallelism over any of them are
// implementations. docs/design/layouts.md describes each one's collectives.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "comm/collectives.h"
#include "memory/memory_account.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "trainbench/placement.h"
#include "trainbench/run_config.h"

namespace trainbench {

struct LayoutSetup {
    const RunConfig* config = nullptr;
    int rank = 0;
    int world_size = 1;
    torch::Device device = torch::kCPU;
    Collectives* collectives = nullptr;
    // runtime.expert_parallel > 1: this rank's expert group and replica group; null otherwise.
    Collectives* expert_collectives = nullptr;
    Collectives* replica_collectives = nullptr;
    int64_t bucket_bytes = 25 << 20;
    int64_t first_bucket_bytes = 1 << 20;
    // runtime.offload optimizer: the account of the rank's host tier (the moments); nullptr:
    // the thread's own.
    MemoryAccount* host_memory = nullptr;
    // What is sharded and where each piece of state lives (placementFor).
    Placement placement;
};

// What a stop requested inside a window does.
enum class StopRule {
    // The rank leaves at its micro-batch boundary; ranks waiting in a collective are released
    // by the abort, and the weights of the last full step can still be saved.
    EndsAlone,
    // Sharded state: the rank leaves the loop but still makes its reduce-scatters, and every rank
    // drops the window together (agreed in the window's reduction), so the state can be gathered.
    AgreedAfterLeaving,
    // Expert parallelism: the other ranks' exchanges need this rank's micro-batches, so the
    // window runs to its end and is dropped there by all.
    AgreedAtWindowEnd,
};

// The squares of the window's gradient sums per noise-scale group over every rank, fp64 on
// the rank's device; `routed`: under expert parallelism the routed experts' share of their
// total (one element), undefined otherwise.
struct GroupSquares {
    torch::Tensor squares;
    torch::Tensor routed;
};

// The whole state for a checkpoint, under the names the files use: valid on rank 0 only.
struct CheckpointTensors {
    NamedTensors model;
    NamedTensors optimizer;
};

class GradientLayout {
public:
    virtual ~GradientLayout() = default;

    virtual StopRule stopRule() const = 0;
    // Whether an out-of-memory micro-batch can be agreed and the window redone: not where
    // reductions run per micro-batch across ranks, nor where experts exchange tokens.
    virtual bool recoversFromOutOfMemory() const = 0;
    // Whether weights or experts are divided among the ranks: every rank then takes part in an
    // evaluation's forward passes, and the samples' weights are gathered; otherwise rank 0
    // alone evaluates and samples on its own whole model.
    virtual bool modelDivided() const = 0;
    // Expert parallelism: this rank's expert group (the ranks that exchange tokens); null
    // without.
    virtual Collectives* expertGroup() const { return nullptr; }
    // Expert parallelism, per parameter (model order): 1 for a routed expert's; empty without.
    virtual std::vector<char> routedExpertMask() const { return {}; }

    // The window: begun once, then per micro-batch begin / (forward) beforeBackward /
    // (backward) end, then closeMicroBatches, then either dropWindow or reduceWindow.
    virtual void beginWindow() = 0;
    virtual void beginMicroBatch(bool last) = 0;
    // After the forward: the experts no token reached get no gradient, so buckets reduced during
    // the coming backward need not wait for them.
    virtual void beforeBackward(bool last) = 0;
    virtual void endMicroBatch() = 0;
    // After the micro-batch loop, also on a rank that left it early (a stop, out of memory):
    // ends a micro-batch left open and makes the calls of those it did not run, so every
    // rank's calls pair up, and starts the reductions left.
    virtual void closeMicroBatches(int64_t micro_batches) = 0;
    // The unit-major window (runtime.window_schedule unit, train/unit_order.h), in this
    // order on every rank: beginWindow; for u = 0..U-2 holdUnit(u, false), the window's forwards
    // through u, releaseUnit(u); the head U-1 held the same way, then for u = U-1..0 (the head
    // still held, the others holdUnit(u, true)) per micro-batch k beginUnitMicroBatch(u, k + 1 == K),
    // its backward through u, endUnitMicroBatch(), then releaseUnit(u); then closeUnits(); then
    // dropWindow or reduceWindow. A unit's weights are gathered twice a window, not 2K times;
    // its gradients reduce as under the micro-batch order (stages 2-3: each micro-batch's
    // reduce-scatter, in order; stages 0-1: once at the end).
    virtual void holdUnit(int64_t unit, bool backward) = 0;
    virtual void releaseUnit(int64_t unit) = 0;
    virtual void beginUnitMicroBatch(int64_t unit, bool last) = 0;
    virtual void endUnitMicroBatch() = 0;
    virtual void closeUnits() = 0;
    // A window every rank drops (agreed): its partial sums go, gradients back to zero.
    virtual void dropWindow() = 0;
    // The window's gradient sums completed over the ranks (or this rank's slices of them).
    virtual void reduceWindow() = 0;

    // Collective: the squared norms per group (group_of_param: the group of each parameter, in
    // model order).
    virtual GroupSquares groupSquares(const std::vector<int>& group_of_param, int64_t groups) = 0;
    // One AdamW step at `lr`, every gradient divided by `grad_divisor` as it is read (N, and
    // the clipping factor); every rank ends it with its weights current.
    virtual void step(double lr, double grad_divisor) = 0;
    // Collective: the whole weights and moments, gathered for rank 0 to write.
    virtual CheckpointTensors gatherCheckpoint() = 0;
    // Collective at stage 3: copies of the parameters in model order, whole.
    virtual std::vector<torch::Tensor> wholeParameters() = 0;

    virtual int64_t bucketCount() const = 0;
    virtual int64_t expertBucketCount() const { return 0; }
    // Buckets the last window started during its backward (overlapped reduction).
    virtual int64_t bucketsOverlapped() const = 0;
    // The bytes this rank's offload files (runtime.offload_dir) have read and written since the
    // start (the moments, under offload all the weights' shards, the gradient sums in a file),
    // and what its host link moved each way (the host step's copies, shards going up).
    struct OffloadTraffic {
        int64_t read = 0, written = 0;
        int64_t to_device = 0, to_host = 0;
    };
    virtual OffloadTraffic offloadTraffic() const { return {}; }
    // Stage 3: the bytes of this rank's weight shards its gathers have taken from where they
    // live (the device, host memory or offload_dir) since the start: 2K passes a window under the
    // micro-batch order, two under the unit order.
    virtual int64_t shardBytesGathered() const { return 0; }
};

// The layout the config asks for (runtime.zero_stage, runtime.expert_parallel) over `model`,
// whose weights are already every rank's starting ones. Expert parallelism hands each rank its
// experts here. `resumed_optimizer`: a checkpoint's whole AdamW state to continue from (any
// layout wrote it), or null.
std::unique_ptr<GradientLayout> makeGradientLayout(const LayoutSetup& setup, Transformer& model,
                                                   const NamedTensors* resumed_optimizer);

}  // namespace trainbench
