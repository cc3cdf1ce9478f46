// The window's one reduction, by name: every statistic the ranks sum at a window's end (the loss
// and target sums, the agreed flags, each rank's own slots, the expert loads, the noise scale's
// sums) gets a slot of its own when it is added; reduce() packs them into one fp64 tensor, sums
// it over the ranks in one all-reduce and copies it to the host once; each slot reads back its
// own values. A new statistic is one more add(), nothing renumbered.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "comm/collectives.h"
#include "trainbench/noise_scale.h"

namespace trainbench {

class WindowStatistics {
public:
    // A slot's handle: valid for the object that made it.
    struct Slot {
        int64_t index = -1;
        bool valid() const { return index >= 0; }
    };

    explicit WindowStatistics(torch::Device device);

    // Values this rank holds on its device (any shape and dtype; summed as fp64).
    Slot add(const torch::Tensor& values);
    // A number known on the host (all of them travel to the device in one copy).
    Slot add(double value);
    // One value per rank of `ranks`, this rank's own set and the others 0: after the sum, every
    // rank's value.
    Slot perRank(int64_t ranks, int64_t rank, double value);

    // The sum over the ranks of `collectives` (one all-reduce and one copy to the host: the
    // window's host synchronisation). Slots are read after it.
    void reduce(Collectives& collectives);

    int64_t size(Slot slot) const;
    double value(Slot slot, int64_t i = 0) const;
    // The slot's values on the host, fp64 [size].
    torch::Tensor tensor(Slot slot) const;

private:
    struct Entry {
        int64_t size = 0;
        int64_t part = -1;        // index into device_parts_, or -1: host values from host_begin
        int64_t host_begin = 0;
        int64_t offset = 0;       // in the packed tensor, known after reduce()
    };
    const Entry& reduced(Slot slot) const;

    torch::Device device_;
    std::vector<Entry> entries_;
    std::vector<torch::Tensor> device_parts_;
    std::vector<double> host_values_;
    torch::Tensor sums_;  // on the host, after reduce()
};

// The outcome of one accumulation window, identical on every rank (globally reduced).
struct WindowResult {
    double loss_sum = 0;               // summed token loss over the window and all ranks
    int64_t tokens = 0;                // N: counted targets over the window and all ranks
    double aux_loss_sum = 0;           // the sequence-wise balance loss, token-weighted, summed
    // model.n_mtp_depth D > 0, per depth: the summed token loss and the counted targets over the
    // window and all ranks, and lambda this window trained with.
    std::vector<double> mtp_loss_sums;
    std::vector<int64_t> mtp_tokens;
    double mtp_weight = 0;
    double grad_norm = 0;              // of the global mean gradient (the sums / N)
    std::vector<torch::Tensor> loads;  // per MoE layer: tokens per expert, int64 [E], global
    std::vector<int64_t> rank_peak_bytes;  // per rank: the most CPU bytes held during the window
    std::vector<int64_t> rank_received;    // expert parallelism, per rank: routed rows its experts received
    int64_t collectives = 0;           // collective calls this window made
    // runtime.offload_dir: bytes every rank's files read and wrote since the last window's
    // statistics (the step before's optimizer, this window's shard reads under offload all).
    int64_t offload_read_bytes = 0;
    int64_t offload_written_bytes = 0;
    // The host link's bytes every rank moved each way since the last window's statistics: the
    // host step's gradient slices down and weights up, stage 3's shards going up from host
    // memory, the unit order's boundaries in host memory (PCIe on a GPU).
    int64_t to_device_bytes = 0;
    int64_t to_host_bytes = 0;
    // Stage 3: the weight shards' bytes every rank's gathers took this window (and since the last
    // window's statistics: a checkpoint's or an evaluation's gathers count too).
    int64_t shard_gathered_bytes = 0;
    // The gradient noise scale's parts of this window (train.noise_scale, M >= 2), total and per
    // noiseScaleGroups() entry; empty without.
    std::optional<NoiseScaleParts> noise;
    std::vector<std::optional<NoiseScaleParts>> noise_groups;
};

}  // namespace trainbench
