// test_fp8_cuda's GPU case without Qt, for the GPU machine (bench/gpu.sh): the fp8 Linear on an
// SM90 GPU's tensor cores against the CPU emulation on the same operands, each case held to the
// bounds of tests/engine/fp8_cuda_comparison.h. Prints one JSON object; exit 0 when every case
// passes, 1 when one does not, 2 when this machine cannot run the fp8 products (and why).
//
//   build-gpu/bin/bench_fp8_cuda_check
#include <cstdio>
#include <exception>

#include <nlohmann/json.hpp>

#include "fp8_cuda_comparison.h"

using namespace trainbench;

int main() {
    nlohmann::json result;
    if (!torch::cuda::is_available()) {
        result = {{"pass", false}, {"skipped", "no CUDA device: the fp8 products need an SM90 GPU"}};
        std::puts(result.dump().c_str());
        return 2;
    }
    if (const auto why = kernels::fp8CudaUnsupportedReason(0); !why.empty()) {
        result = {{"pass", false}, {"skipped", why}};
        std::puts(result.dump().c_str());
        return 2;
    }
    bool all = true;
    result["cases"] = nlohmann::json::array();
    for (const Fp8CudaCase& c : fp8CudaCases()) {
        nlohmann::json row = {{"case", c.name}};
        try {
            const Fp8CudaComparison r = compareFp8CudaWithEmulation(c);
            row.update({{"y", r.y}, {"dx", r.dx}, {"dw", r.dw}, {"bound", r.bound}, {"dw_bound", r.dw_bound},
                        {"dtypes_right", r.dtypes_right}, {"pass", r.passes()}});
            all = all && r.passes();
        } catch (const std::exception& e) {
            row.update({{"error", e.what()}, {"pass", false}});
            all = false;
        }
        result["cases"].push_back(row);
    }
    result["pass"] = all;
    std::puts(result.dump().c_str());
    return all ? 0 : 1;
}
