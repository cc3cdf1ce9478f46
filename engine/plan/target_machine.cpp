// The target machine: the config's target section over the named kinds' table.
#include "trainbench/target_machine.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cmath>

#include "trainbench/device_type.h"
#include "trainbench/memory_plan.h"

namespace trainbench {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

int64_t gibBytes(double gib) { return static_cast<int64_t>(std::llround(gib * kGiB)); }

// A figure of the target section when set (> 0), else the kind's.
double either(double configured, double fallback) { return configured > 0 ? configured : fallback; }

int64_t physicalMemoryBytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : 0;
}

int64_t freeBytesIn(const std::string& directory) {
    struct statvfs fs {};
    if (directory.empty() || statvfs(directory.c_str(), &fs) != 0) return 0;
    return int64_t(fs.f_bavail) * int64_t(fs.f_frsize);
}

// The kind's dense peak in runtime.dtype. On a GPU "auto" is bf16 (trainbench/compute_dtype.h).
// fp8 runs only the Linears' products in fp8 (attention, head and router stay bf16): its peak
// bounds the step from above, and a kind without fp8 products (A100) has none.
double peakTflops(const RunConfig& config, const DeviceKind& kind) {
    if (isChoice(config.runtime.dtype, ComputeDtype::Fp32)) return kind.fp32_tflops;
    if (isChoice(config.runtime.dtype, ComputeDtype::Fp8)) return kind.fp8_tflops;
    return kind.bf16_tflops;
}

}  // namespace

const std::vector<DeviceKind>& deviceKinds() {
    // Drives: DGX A100 320 GB has 4 x 3.84 TB, the others 8 x 3.84 TB (28,610 GiB).
    static const std::vector<DeviceKind> kinds = {
        {TargetKind::A100_40, "a100-40", "A100 40 GB", 40960, 19.5, 312, 0, 25, 300, 25, 8, 1024, 14305, 200, 28, 20},
        {TargetKind::A100_80, "a100-80", "A100 80 GB", 81920, 19.5, 312, 0, 25, 300, 25, 8, 2048, 28610, 200, 56, 40},
        {TargetKind::H100_80, "h100-80", "H100 80 GB", 81559, 67, 989, 1979, 50, 450, 50, 8, 2048, 28610, 200, 56, 40},
        {TargetKind::H200_141, "h200-141", "H200 141 GB", 143771, 67, 989, 1979, 50, 450, 50, 8, 2048, 28610, 200, 56, 40},
        {TargetKind::B200_180, "b200-180", "B200 180 GB", 183359, 80, 2250, 4500, 50, 900, 50, 8, 2048, 28610, 200, 56, 40},
    };
    return kinds;
}

const DeviceKind* findDeviceKind(TargetKind kind) {
    for (const DeviceKind& k : deviceKinds())
        if (k.kind == kind) return &k;
    return nullptr;
}

TargetMachine resolveTarget(const RunConfig& config) {
    const TargetConfig& t = config.target;
    TargetMachine m;
    m.kind = targetKind(t);
    m.devices = t.devices > 0 ? t.devices : std::max<int64_t>(1, config.runtime.world_size);
    m.mfu = t.mfu;
    m.compute_tflops = t.compute_tflops;
    m.pcie_gbps = t.pcie_gbps;
    m.interconnect_gbps = t.interconnect_gbps;
    m.network_gbps = t.network_gbps;
    m.host_memory_gbps = t.host_memory_gbps;
    m.nvme_read_gbps = t.nvme_read_gbps;
    m.nvme_write_gbps = t.nvme_write_gbps;
    m.cpu_adamw_gparams = t.cpu_adamw_gparams;
    if (m.kind == TargetKind::Here) {
        RunConfig here = config;
        here.runtime.world_size = m.devices;
        m.gpu = deviceTypeOf(config.runtime) == DeviceType::Cuda;
        m.devices_per_node = t.devices_per_node > 0 ? t.devices_per_node : m.devices;
        m.device_memory_bytes = t.device_memory_gib > 0 ? gibBytes(t.device_memory_gib) : deviceMemoryBytesPerRank(here);
        // On CPU ranks the host is the device: what offload keeps there counts in the device's
        // budget already (MemoryPlan::fits), so there is no second limit.
        m.host_memory_bytes = t.host_memory_gib > 0 ? gibBytes(t.host_memory_gib) : m.gpu ? physicalMemoryBytes() : 0;
        m.nvme_bytes = t.nvme_gib > 0 ? gibBytes(t.nvme_gib) : freeBytesIn(config.runtime.offload_dir);
        const char* device = m.gpu ? "cuda" : "cpu";
        m.label = "this machine (" + std::string(device) + ", " + std::to_string(m.devices) +
                  (m.devices == 1 ? " rank)" : " ranks)");
    } else {
        const DeviceKind* kind = findDeviceKind(m.kind);
        DeviceKind custom;  // custom: only what the section gives
        if (!kind) kind = &custom;
        m.gpu = true;
        m.devices_per_node = t.devices_per_node > 0 ? t.devices_per_node : kind->devices_per_node;
        m.device_memory_bytes = t.device_memory_gib > 0 ? gibBytes(t.device_memory_gib) : kind->memory_mib * 1024 * 1024;
        m.host_memory_bytes = gibBytes(either(t.host_memory_gib, kind->host_memory_gib));
        m.nvme_bytes = gibBytes(either(t.nvme_gib, kind->nvme_gib));
        m.compute_tflops = either(t.compute_tflops, peakTflops(config, *kind));
        m.pcie_gbps = either(t.pcie_gbps, kind->pcie_gbps);
        m.interconnect_gbps = either(t.interconnect_gbps, kind->interconnect_gbps);
        m.network_gbps = either(t.network_gbps, kind->network_gbps);
        m.host_memory_gbps = either(t.host_memory_gbps, kind->host_memory_gbps);
        m.nvme_read_gbps = either(t.nvme_read_gbps, kind->nvme_read_gbps);
        m.nvme_write_gbps = either(t.nvme_write_gbps, kind->nvme_write_gbps);
        const std::string name = m.kind == TargetKind::Custom
                                     ? "custom " + std::to_string(int64_t(std::llround(t.device_memory_gib))) + " GiB"
                                     : std::string(kind->label);
        m.label = std::to_string(m.devices) + " x " + name;
    }
    m.devices_per_node = std::max<int64_t>(1, m.devices_per_node);
    m.nodes = (m.devices + m.devices_per_node - 1) / m.devices_per_node;
    return m;
}

RunConfig configOnTarget(RunConfig config, const TargetMachine& target) {
    config.runtime.world_size = target.devices;
    if (target.kind != TargetKind::Here) {
        config.runtime.device = "cuda";
        config.runtime.memory_limit_mb = 0;
    }
    return config;
}

}  // namespace trainbench
