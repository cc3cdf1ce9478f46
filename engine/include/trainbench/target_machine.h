// The machine a plan is for: this one, or devices of a named GPU kind in nodes modelled on that
// GPU's DGX. Torch-free (the GUI includes it); figures come from the config's target section,
// then the kind's table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

// One named GPU and the node it usually sits in. Memory is what the driver reports as total
// (nvidia-smi, MiB); peaks are dense (no sparsity), from NVIDIA's datasheets; the node's
// figures are its DGX's: host memory, the data drives' capacity and their summed sequential
// rates (7 GB/s read, 5 GB/s write per drive), and about 200 GB/s of host memory bandwidth the
// CPU optimizer can use. Copy rates are what a transfer reaches, not the link's signalling rate.
struct DeviceKind {
    TargetKind kind = TargetKind::Here;
    const char* name = "";   // target.kind's value
    const char* label = "";  // "H100 80 GB"
    int64_t memory_mib = 0;
    double fp32_tflops = 0, bf16_tflops = 0, fp8_tflops = 0;  // 0: none
    double pcie_gbps = 0;          // per direction
    double interconnect_gbps = 0;  // NVLink, per direction
    double network_gbps = 0;       // per GPU between nodes
    int64_t devices_per_node = 8;
    double host_memory_gib = 0, nvme_gib = 0;
    double host_memory_gbps = 0, nvme_read_gbps = 0, nvme_write_gbps = 0;
};

// The named kinds, in target.kind's order (here and custom excluded).
const std::vector<DeviceKind>& deviceKinds();
const DeviceKind* findDeviceKind(TargetKind kind);

// A target with every figure resolved. 0 for a rate: unknown (the step-time prediction leaves
// its term out and says which setting would give it); 0 for host memory or NVMe: not checked
// (host) or absent (NVMe).
struct TargetMachine {
    TargetKind kind = TargetKind::Here;
    std::string label;          // "8 x H100 80 GB" or "this machine (cpu, 2 ranks)"
    bool gpu = false;           // the devices' memory is apart from the host's
    int64_t devices = 1;
    int64_t devices_per_node = 1;
    int64_t nodes = 1;
    int64_t device_memory_bytes = 0;  // per device (here: runtime.memory_limit_mb or the device's share)
    int64_t host_memory_bytes = 0;    // per node
    int64_t nvme_bytes = 0;           // per node
    double compute_tflops = 0;        // per device at the config's runtime.dtype
    double mfu = 0.4;
    double pcie_gbps = 0, interconnect_gbps = 0, network_gbps = 0;
    double host_memory_gbps = 0, nvme_read_gbps = 0, nvme_write_gbps = 0;
    double cpu_adamw_gparams = 0;  // per node; 0: the step bounded by host memory alone
    int64_t ranksPerNode() const { return devices < devices_per_node ? devices : devices_per_node; }
};

// The config's target, resolved. "here" reads this machine (its RAM, the GPU's memory, the free
// space of runtime.offload_dir) and knows no rate unless the target section gives it.
TargetMachine resolveTarget(const RunConfig& config);

// The config as it would run on the target: world_size its devices, runtime.device cuda for a
// GPU kind, this machine's memory_limit_mb dropped; the model, batch and layout unchanged.
RunConfig configOnTarget(RunConfig config, const TargetMachine& target);

}  // namespace trainbench

// Floor: plan/ (engine/README.md)
