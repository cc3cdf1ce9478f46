// The names of a run's metrics: one place for the engine that writes them, the CLI and the GUI
// that read them and the store that keeps them. Keys are "<area>/<name>"; memory keys name a
// device ("mem/cuda3/peak_bytes", "mem/cpu2/allocated_bytes": CPU ranks share the host, so each
// has its own name), expert-load keys a layer and an expert ("moe/layer4/expert17/tokens").
#pragma once

#include <optional>
#include <cstdint>
#include <string>
#include <string_view>

namespace trainbench::metric {

// Every optimizer step (written by rank 0).
inline constexpr char kLoss[] = "train/loss";            // mean token loss of the window
inline constexpr char kGradNorm[] = "train/grad_norm";   // of the global mean gradient, before clipping
inline constexpr char kLearningRate[] = "train/lr";
inline constexpr char kTokens[] = "train/tokens";        // counted targets so far (the token clock)
inline constexpr char kGlobalBatch[] = "train/global_batch";  // sequences in the step's window
inline constexpr char kEvalLoss[] = "eval/loss";
inline constexpr char kEntropyFloor[] = "data/entropy_floor";  // the synthetic source's loss floor (step 0)
inline constexpr char kTokensPerSecond[] = "perf/tokens_per_s";
inline constexpr char kStepTime[] = "perf/step_time_s";
inline constexpr char kAllToAllTime[] = "perf/all_to_all_s";  // expert parallelism's exchanges
inline constexpr char kCollectives[] = "comm/collectives";    // collective calls in the window
inline constexpr char kAuxLoss[] = "moe/aux_loss";
// Multi-token prediction (model.n_mtp_depth): "train/mtp_loss/<k>", depth k's mean token loss of
// the window (k = 1..D); train/loss stays the main next-token loss. "train/mtp_weight": lambda.
inline std::string mtpLossKey(int64_t depth) { return "train/mtp_loss/" + std::to_string(depth); }
inline constexpr char kMtpWeight[] = "train/mtp_weight";
// runtime.offload_dir: what every rank's offload files read and wrote between two steps'
// statistics (the step before's optimizer, this window's shard reads under offload all), and
// those bytes over the step's time.
inline constexpr char kOffloadReadBytes[] = "io/read_bytes";
inline constexpr char kOffloadWriteBytes[] = "io/write_bytes";
inline constexpr char kOffloadReadRate[] = "io/read_gbps";
inline constexpr char kOffloadWriteRate[] = "io/write_gbps";
// What every rank's host link moved each way in the step (PCIe on a GPU: the host step's
// gradient slices down and weights up, offload all's shards up, the unit order's boundary
// activations kept in host memory, both ways), where the placement moves anything across it.
inline constexpr char kHostToDeviceBytes[] = "io/to_device_bytes";
inline constexpr char kDeviceToHostBytes[] = "io/to_host_bytes";
// ZeRO stage 3: the weight shards' bytes every rank's gathers took in the step from where they
// live (under offload all: host memory or offload_dir; the unit order takes them twice a
// window, the micro-batch order twice per micro-batch).
inline constexpr char kShardGatheredBytes[] = "io/gathered_bytes";

// A mixture (data.sources): "data/<source>/tokens", the token positions (samples x seq_len) the
// steps so far drew from the source: with packed documents, its tokens read.
inline std::string dataSourceTokensKey(const std::string& source) { return "data/" + source + "/tokens"; }

// The gradient noise scale (train.noise_scale): raw parts, their averages, the critical batch.
inline constexpr char kNoiseGradSq[] = "noise/grad_sq";
inline constexpr char kNoiseTrace[] = "noise/trace";
inline constexpr char kNoiseGradSqAverage[] = "noise/grad_sq_ema";
inline constexpr char kNoiseTraceAverage[] = "noise/trace_ema";
inline constexpr char kCriticalBatchTokens[] = "noise/critical_batch_tokens";
inline constexpr char kCriticalBatchSequences[] = "noise/critical_batch_sequences";
inline constexpr char kCriticalBatchRelativeError[] = "noise/critical_batch_rel_error";
// Per parameter group: "noise/<group>/grad_sq", ".../trace", ".../critical_batch_tokens".
inline std::string noiseGroupKey(const std::string& group, const std::string& what) {
    return "noise/" + group + "/" + what;
}

// Memory: what a device's sample or a window's peak holds.
inline constexpr char kPeakBytes[] = "peak_bytes";            // most held during a window
inline constexpr char kAllocatedBytes[] = "allocated_bytes";  // held now (sampled twice a second)
inline constexpr char kHostBytes[] = "host_bytes";  // held in host memory by offload (the rank's AdamW moments)
inline constexpr char kReservedBytes[] = "reserved_bytes";    // CUDA: held by the caching allocator
inline constexpr char kFreeBytes[] = "free_bytes";
inline constexpr char kDeviceUsedBytes[] = "device_used_bytes";  // NVML: every process on the GPU
inline constexpr char kUtilizationPercent[] = "utilization_percent";

// The device's name in memory keys: "cuda:i" is "cuda<i>"; a CPU rank is "cpu<rank>".
inline std::string memoryDeviceName(const std::string& device, int rank) {
    if (device.rfind("cuda:", 0) == 0) return "cuda" + device.substr(5);
    return "cpu" + std::to_string(rank);
}
// "mem/<device name>/<what>".
inline std::string memoryKeyOf(const std::string& device_name, const std::string& what) {
    return "mem/" + device_name + "/" + what;
}
// The key of rank `rank` on `device` ("cpu" or "cuda:i").
inline std::string memoryKey(const std::string& device, int rank, const char* what) {
    return memoryKeyOf(memoryDeviceName(device, rank), what);
}

struct MemoryKey {
    std::string device;  // "cuda0", "cpu3"
    std::string what;    // "peak_bytes", ...
};
// "mem/<device>/<what>", else nothing.
inline std::optional<MemoryKey> parseMemoryKey(std::string_view key) {
    constexpr std::string_view prefix = "mem/";
    if (key.substr(0, prefix.size()) != prefix) return std::nullopt;
    key.remove_prefix(prefix.size());
    const size_t slash = key.find('/');
    if (slash == 0 || slash == std::string_view::npos || slash + 1 == key.size()) return std::nullopt;
    if (key.find('/', slash + 1) != std::string_view::npos) return std::nullopt;
    return MemoryKey{std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

// Expert load (MoE layers, numbered as in the model; experts and ranks from 0).
inline std::string expertTokensKey(int layer, int expert) {
    return "moe/layer" + std::to_string(layer) + "/expert" + std::to_string(expert) + "/tokens";
}
inline std::string loadMaxOverMeanKey(int layer) { return "moe/layer" + std::to_string(layer) + "/load_max_over_mean"; }
inline std::string rankReceivedKey(int rank) { return "moe/rank" + std::to_string(rank) + "/tokens_received"; }

struct LoadKey {
    enum class Kind { ExpertTokens, MaxOverMean, RankReceived } kind;
    int layer = 0;  // the rank for RankReceived
    int expert = 0;
};
// One of the three keys above, else nothing.
std::optional<LoadKey> parseLoadKey(std::string_view key);

}  // namespace trainbench::metric

// Floor: metrics/ (engine/README.md)
