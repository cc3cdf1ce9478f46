#include "trainbench/placement.h"

#include <algorithm>

#include "trainbench/compute_dtype.h"

namespace trainbench {

Sharding shardingOf(int64_t zero_stage) {
    // Indexed by the stage (validated 0-3).
    static constexpr Sharding kStages[] = {
        {/*moments=*/false, /*gradients=*/false, /*weights=*/false},
        {/*moments=*/true, /*gradients=*/false, /*weights=*/false},
        {/*moments=*/true, /*gradients=*/true, /*weights=*/false},
        {/*moments=*/true, /*gradients=*/true, /*weights=*/true},
    };
    return kStages[std::clamp<int64_t>(zero_stage, 0, 3)];
}

const char* tierName(Tier tier) {
    switch (tier) {
        case Tier::Device: return "device";
        case Tier::Host: return "host";
        case Tier::File: return "file";
    }
    return "device";
}

namespace {

// runtime.window_schedule, "auto" resolved: where the weights stay on the device nothing is
// streamed, and the unit order would only keep K boundary activations per block for nothing;
// where they are streamed it moves them twice a window instead of 2K times (the planner's
// terms: docs/design/offload.md).
void placeWindow(Placement& p, const RunConfig& config, const PlacementQuery& query) {
    const WindowSchedule asked = windowSchedule(config.runtime);
    // (unit needs whole blocks recomputed: a run's config is refused otherwise; a layout the
    // planner tries with less recomputation keeps the micro-batch order)
    const bool streamed = p.sharded.weights && p.weightsOffDevice();
    const bool recomputed = recomputation(config.runtime) == Recomputation::Full;
    p.unit_order = recomputed && (asked == WindowSchedule::Unit ||
                                  (asked == WindowSchedule::Auto && streamed && !query.unit_order_fits_nowhere));
    if (p.unit_order && query.boundaries_off_device && query.device == DeviceType::Cuda) p.boundaries = Tier::Host;
    // (a CPU rank's host memory is its device's: the file is the one tier off it)
    if (p.unit_order && query.boundaries_in_file && !config.runtime.offload_dir.empty()) p.boundaries = Tier::File;
    if (query.gradient_sums_in_file && p.gradientSumsMayGoToFile()) p.gradient_sums = Tier::File;
}

Placement placementOf(const RunConfig& config, const PlacementQuery& query) {
    Placement p;
    p.sharded = shardingOf(config.runtime.zero_stage);
    const Offload offloading = offload(config.runtime);
    if (offloading == Offload::None) return p;  // everything on the device
    // Offload needs stage 1 (its shards are what leaves) and all needs stage 3 (config validation).
    const Tier off_device = config.runtime.offload_dir.empty() ? Tier::Host : Tier::File;
    p.moments = off_device;
    p.host_step = query.device == DeviceType::Cuda || query.host_step_on_cpu;
    if (offloading == Offload::All) p.weights = off_device;
    if (p.host_step || p.weightsOffDevice()) p.master = off_device;
    if (query.gradient_sums_off_device && p.gradientSumsMayLeaveDevice()) p.gradient_sums = Tier::Host;
    // bf16 autocast (a GPU, or CPU ranks with their kernels off) rounds the products' weights to
    // bf16 at every use: with the master on the host, the device may as well keep them so.
    // fp8 on a GPU is that autocast for every product but the fp8 ones, which then quantise the
    // bf16 weights (as mixed precision's bf16 parameters beside an fp32 master are quantised):
    // half the bytes over PCIe and in the gathers, the weights' gradients still fp32; not the
    // fp32 weights' numbers (docs/design/fp8.md). CPU ranks under fp8 run their other products
    // in fp32, so their weights stay fp32 there.
    const bool cuda = query.device == DeviceType::Cuda;
    const bool autocast = cuda || query.cpu_autocast;
    const ComputeDtype dtype = resolveComputeDtype(config, cuda);
    const bool bf16 = !query.fp64 && dtype == ComputeDtype::Bf16;
    const bool fp8_on_gpu = !query.fp64 && cuda && dtype == ComputeDtype::Fp8;
    p.bf16_device_weights = p.host_step && ((autocast && bf16) || fp8_on_gpu);
    return p;
}

}  // namespace

Placement placementFor(const RunConfig& config, const PlacementQuery& query) {
    Placement p = placementOf(config, query);
    placeWindow(p, config, query);
    return p;
}

}  // namespace trainbench
