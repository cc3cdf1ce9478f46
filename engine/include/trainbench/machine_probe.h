// What this machine does, measured: the rates the planner's step time needs for target.kind
// "here" (`trainbench-cli probe`). Torch-free header.
#pragma once

#include <cstdint>
#include <string>

#include "trainbench/run_config.h"

namespace trainbench {

struct MachineProbe {
    int threads = 0;  // a rank's, for the products; the copy and the AdamW run on every core (the node's)
    // A copy between two buffers much larger than the caches on every thread, counted as bytes
    // read plus bytes written per second (STREAM's copy, and how the CPU AdamW's bytes are counted).
    double host_copy_gbps = 0;
    // fp32 matrix products (n 2048) on a rank's threads.
    double cpu_fp32_tflops = 0;
    // The fused AdamW step (the host step's kernel, fp32 weights, gradients and moments) over
    // slices larger than the caches, billions of parameters a second on those threads.
    double cpu_adamw_gparams = 0;
    // The share of cpu_fp32_tflops one forward and backward of the config's model reaches (the
    // planner's FLOPs of a micro-batch over its measured time, fp32, on the same threads); 0 when
    // not measured (probeStepMfu).
    double step_mfu = 0;
    // CPU rank threads' collectives (the in-process hub) among `collective_ranks` threads: an
    // all-reduce, a reduce-scatter and an all-gather of fp32 buffers larger than the caches,
    // counted as the bytes a ring sends per rank (4n (W - 1) / W for the three of n bytes) a
    // second: the rate the planner's collectives term divides its ring bytes by
    // (target.interconnect_gbps); 0 when not measured (one rank, or GPU ranks).
    int collective_ranks = 0;
    double rank_collectives_gbps = 0;
    // A directory's direct (O_DIRECT, libaio) write and read rates; 0 when none was probed.
    std::string directory;
    int64_t directory_bytes = 0;
    double directory_write_gbps = 0;
    double directory_read_gbps = 0;
};

// Measures with `copy_bytes` per buffer and `directory_bytes` through a scratch file in
// `directory` (empty: no directory). Throws ConfigError naming `field` when the directory cannot
// take the file (missing, read-only, no O_DIRECT, full).
MachineProbe probeMachine(int threads, int64_t copy_bytes, const std::string& directory, int64_t directory_bytes,
                          const std::string& field);

std::string machineProbeToJson(const MachineProbe& probe);

// The in-process hub's rate among `ranks` rank threads (MachineProbe::rank_collectives_gbps),
// with buffers of `bytes`, the best of three rounds after a warm-up; 0 for fewer than two ranks.
double probeRankThreadCollectives(int ranks, int64_t bytes);

// The step's MFU on CPU ranks: one micro-batch of `config`'s model (its micro_batch_size,
// seq_len and recomputation, fp32, random tokens) forward and backward on `threads` threads, the
// best of three after a warm-up, its planner FLOPs over the time and `cpu_fp32_tflops`.
double probeStepMfu(const RunConfig& config, int threads, double cpu_fp32_tflops);

// The threads a rank of `config` computes on, which the probe measures with: runtime.threads, or
// the cores shared out over runtime.world_size rank threads (as a session sets them).
int probeThreads(const RunConfig& config);

// `target` with the rates a probe measured in the fields it leaves 0 (what `trainbench-cli probe`
// tells a user to set, and what the batch panel plans with): host_memory_gbps the copy rate; on
// CPU ranks compute_tflops the matrix rate with mfu the step's measured share of it (step_mfu;
// 1 where not measured); nvme_read_gbps and nvme_write_gbps the
// directory's, when the probe measured `offload_dir` (another directory may be another disk);
// cpu_adamw_gparams the fused AdamW's rate; on CPU ranks interconnect_gbps the rank threads'
// collectives rate, when measured.
TargetConfig withProbedRates(TargetConfig target, const MachineProbe& probe, bool cpu_ranks,
                             const std::string& offload_dir);

}  // namespace trainbench

// Floor: plan/ (engine/README.md)
