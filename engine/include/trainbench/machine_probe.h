// What this machine does, measured: the rates the planner's step time needs for target.kind
// "here" (`trainbench-cli probe`). Torch-free header.
#pragma once

#include <cstdint>
#include <string>

#include "trainbench/run_config.h"

namespace trainbench {

struct MachineProbe {
    int threads = 0;
    // A copy between two buffers much larger than the caches on every thread, counted as bytes
    // read plus bytes written per second (STREAM's copy, and how the CPU AdamW's bytes are counted).
    double host_copy_gbps = 0;
    // fp32 matrix products (n 1024) on the threads the run would use.
    double cpu_fp32_tflops = 0;
    // The fused AdamW step (the host step's kernel, fp32 weights, gradients and moments) over
    // slices larger than the caches, billions of parameters a second on those threads.
    double cpu_adamw_gparams = 0;
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

// The threads a run of `config` computes on, which the probe measures with: runtime.threads, or
// every core.
int probeThreads(const RunConfig& config);

// `target` with the rates a probe measured in the fields it leaves 0 (what `trainbench-cli probe`
// tells a user to set, and what the batch panel plans with): host_memory_gbps the copy rate; on
// CPU ranks compute_tflops the matrix rate with mfu 1 (the products' measured rate is what a CPU
// step reaches, not a datasheet peak: all of it counts); nvme_read_gbps and nvme_write_gbps the
// directory's, when the probe measured `offload_dir` (another directory may be another disk);
// cpu_adamw_gparams the fused AdamW's rate.
TargetConfig withProbedRates(TargetConfig target, const MachineProbe& probe, bool cpu_ranks,
                             const std::string& offload_dir);

}  // namespace trainbench

// Floor: plan/ (engine/README.md)
