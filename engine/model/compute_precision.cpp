#include "model/compute_precision.h"

#include "trainbench/compute_dtype.h"

namespace trainbench {

ComputePrecision computePrecision(const RunConfig& config, torch::Device device, bool fp64) {
    if (fp64) return ComputePrecision::kFp32;
    return asComputePrecision(resolveComputeDtype(config, device.is_cuda()));
}

}  // namespace trainbench
