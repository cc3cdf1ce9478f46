// The CPU AdamW step against what memory allows: the machine's copy rate, the step trainbench
// runs (ATen's fused AdamW kernel, as the sharded optimizer calls it, bucket by bucket), the same
// with the moments stored in bf16 (runtime.optimizer_dtype bf16: kernels::adamWBf16Moments),
// torch's own C++ AdamW, and the step with the moments in offload_dir's files (the NVMe tier),
// fp32 and bf16.
//
//   build/bin/bench_adamw [MILLION_PARAMETERS=16] [STEPS=5] [OFFLOAD_DIR]
//
// An AdamW step touches 28 bytes per fp32 parameter: the weight read and written (8), the
// gradient read (4), both moments read and written (16); 20 with bf16 moments (8 for them). Rates are the best of STEPS, on every
// core ATen uses. Prints one Markdown table (docs/BENCHMARKS.md).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "offload/slice_store.h"
#include "parallel/fused_adamw.h"

using namespace trainbench;

namespace {

double bestSeconds(int repeats, const std::function<void()>& body) {
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < repeats; ++i) {
        const auto start = std::chrono::steady_clock::now();
        body();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

void row(const char* what, double seconds, double params, double bytes) {
    std::printf("| %s | %.1f | %.0f | %.1f |\n", what, seconds * 1e3, params / seconds / 1e6, bytes / seconds / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t n = int64_t((argc > 1 ? std::atof(argv[1]) : 16.0) * 1e6);
    const int steps = argc > 2 ? std::atoi(argv[2]) : 5;
    const std::string dir = argc > 3 ? argv[3] : "";
    torch::NoGradGuard no_grad;
    std::printf("%lld parameters (fp32), %d threads, best of %d\n\n", (long long)n, at::get_num_threads(), steps);
    std::printf("| step | ms | M params/s | GB/s (28 B per parameter, 20 with bf16 moments; copy: 8 B) |\n|---|---|---|---|\n");

    auto src = torch::rand({n}), dst = torch::empty({n});
    row("copy (the memory's rate)", bestSeconds(steps, [&] { dst.copy_(src); }), double(n), 8.0 * double(n));

    // Buckets of 25 MiB as the sharded optimizer steps them.
    const int64_t bucket = (25 << 20) / 4;
    std::vector<int64_t> numels;
    for (int64_t at = 0; at < n; at += bucket) numels.push_back(std::min(bucket, n - at));
    auto weights = torch::rand({n}), grads = torch::rand({n}) * 1e-3;
    auto averages = torch::zeros({n}), squares = torch::zeros({n});
    const AdamWHyper hyper{1e-3, 0.9, 0.95, 0.1, 1e-8};
    int64_t count = 0;
    auto fused = [&](const torch::Tensor& a, const torch::Tensor& s, int64_t offset, int64_t numel) {
        std::vector<torch::Tensor> w{weights.narrow(0, offset, numel)}, g{grads.narrow(0, offset, numel)},
            m{a.narrow(0, 0, numel)}, v{s.narrow(0, 0, numel)}, t{torch::full({}, double(count), torch::kFloat32)};
        fusedAdamWUpdate(w, g, m, v, t, hyper, 1.0);
    };
    row("fused, moments in memory (trainbench)", bestSeconds(steps, [&] {
            ++count;
            int64_t offset = 0;
            for (int64_t numel : numels) {
                fused(averages.narrow(0, offset, numel), squares.narrow(0, offset, numel), offset, numel);
                offset += numel;
            }
        }),
        double(n), 28.0 * double(n));

    auto averages16 = torch::zeros({n}, torch::kBFloat16), squares16 = torch::zeros({n}, torch::kBFloat16);
    row("fused, bf16 moments in memory (trainbench, optimizer_dtype bf16)", bestSeconds(steps, [&] {
            ++count;
            int64_t offset = 0;
            for (int64_t numel : numels) {
                fused(averages16.narrow(0, offset, numel), squares16.narrow(0, offset, numel), offset, numel);
                offset += numel;
            }
        }),
        double(n), 20.0 * double(n));

    auto parameter = torch::rand({n}).requires_grad_(true);
    parameter.mutable_grad() = torch::rand({n}) * 1e-3;
    torch::optim::AdamW reference({parameter}, torch::optim::AdamWOptions(1e-3).betas({0.9, 0.95}).weight_decay(0.1));
    row("torch::optim::AdamW (C++, unfused)", bestSeconds(steps, [&] { reference.step(); }), double(n), 28.0 * double(n));

    for (torch::ScalarType dtype : {torch::kFloat32, torch::kBFloat16}) {
        if (dir.empty()) break;
        const bool bf16 = dtype == torch::kBFloat16;
        auto store = makeFileSliceStore(dir + "/bench_adamw.moments", numels, 2, dtype);
        row(bf16 ? "fused, bf16 moments in offload_dir's file" : "fused, moments in offload_dir's file", bestSeconds(steps, [&] {
                ++count;
                int64_t offset = 0;
                for (size_t b = 0; b < numels.size(); ++b) {
                    auto slices = store->acquire(b);
                    auto a = slices[0], s = slices[1];
                    store->prefetch(b + 1);
                    fused(a, s, offset, numels[b]);
                    store->release(b, true);
                    offset += numels[b];
                }
                store->flush();
            }),
            double(n), (bf16 ? 20.0 : 28.0) * double(n));
        std::printf("\n%s moments' file traffic per step: %.0f MiB read, %.0f MiB written\n\n", bf16 ? "bf16" : "fp32",
                    double(store->bytesRead()) / double(steps) / (1 << 20), double(store->bytesWritten()) / double(steps) / (1 << 20));
    }
    return 0;
}
