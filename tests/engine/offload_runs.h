// The offload suites' runs: the conformance splits with runtime.offload, on rank threads, through
// the CPU ranks' path or the GPU ranks' host step (its copies plain here).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "conformance_setup.h"
#include "rank_threads.h"

namespace trainbench {

// A conformance split (m, K, W) at a ZeRO stage and expert parallelism.
struct SplitCase {
    int64_t m, K, W, stage, EP;
};

inline RunConfig offloaded(RunConfig c, const std::string& dir, const char* what = "optimizer") {
    c.runtime.offload = what;
    c.runtime.offload_dir = dir;
    return c;
}

inline RunConfig split(int64_t m, int64_t K, int64_t W, int64_t stage, int64_t EP = 1) {
    RunConfig c = withSplit(conformanceConfig(), m, K, W);
    c.train.weight_decay = 0.1;
    c.train.eval_every = 0;
    c.runtime.zero_stage = stage;
    c.runtime.expert_parallel = EP;
    return c;
}

// The ranks' path under runtime.offload: on the device (CPU ranks), or the GPU ranks' host step
// (its copies plain here), there with the gradients' slice sums on the device or the host.
// SumsInFile: the gradient sums in offload_dir's file where the placement allows it (the unit
// order with the optimizer's state there); elsewhere where they would be. BoundariesInFile: the
// unit order's boundary activations in offload_dir's file.
enum class OffloadPath { Device, HostStep, HostStepSumsOnHost, SumsInFile, HostStepSumsInFile, BoundariesInFile, HostStepBoundariesInFile };

inline RankThreadOptions offloadPathOptions(OffloadPath path) {
    RankThreadOptions options;
    options.bucket_bytes = 4096;  // many buckets: the staging slots take turns, slices cross parameters
    options.host_mirror = path == OffloadPath::HostStep || path == OffloadPath::HostStepSumsOnHost ||
                          path == OffloadPath::HostStepSumsInFile || path == OffloadPath::HostStepBoundariesInFile;
    options.gradient_sums_on_host = path == OffloadPath::HostStepSumsOnHost;
    options.gradient_sums_in_file = path == OffloadPath::SumsInFile || path == OffloadPath::HostStepSumsInFile;
    options.boundaries_in_file = path == OffloadPath::BoundariesInFile || path == OffloadPath::HostStepBoundariesInFile;
    return options;
}

// Every rank's whole parameters after `steps` steps on rank threads (wholeParameters: with bf16
// device weights their fp32 master). `bf16_weights`: set to the parameters rank 0 holds in
// bf16 at the end.
inline std::vector<std::vector<torch::Tensor>> weightsAfter(const RunConfig& config, int64_t steps, bool fp64,
                                                            OffloadPath path = OffloadPath::Device,
                                                            int64_t* bf16_weights = nullptr) {
    std::vector<std::vector<torch::Tensor>> weights(config.runtime.world_size);
    RankThreadOptions options = offloadPathOptions(path);
    options.fp64 = fp64;
    onRankTrainers(config, options, [&](int r, RankTrainer& trainer) {
        trainSteps(trainer, steps);
        weights[r] = trainer.wholeParameters();
        if (r == 0 && bf16_weights) {
            *bf16_weights = 0;
            for (const auto& p : trainer.model()->parameters()) *bf16_weights += p.scalar_type() == torch::kBFloat16;
        }
    });
    return weights;
}

}  // namespace trainbench
