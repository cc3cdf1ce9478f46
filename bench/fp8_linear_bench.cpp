// The CPU emulation of the fp8 Linear (kernels/fp8_linear.h) against kernels::linear in fp32 on
// one product shape: forward, backward (both gradients) and the whole step, in tokens per second,
// and the parts the emulation adds (quantising, dequantising). The emulation is the recipe's
// numerical reference, not a speed path: it does every fp32 product kernels::linear does and
// quantises and dequantises each operand on top.
//
//   build/bin/bench_fp8_linear [TOKENS=4096] [IN=1024] [OUT=1024] [REPEATS=5] [THREADS]
//
// Times are the best of REPEATS, on THREADS intra-op threads (by default every core ATen uses). Prints Markdown tables (docs/BENCHMARKS.md).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>

#include "kernels/fp8_blocks.h"
#include "kernels/fp8_linear.h"
#include "kernels/linear.h"

using namespace trainbench;
using namespace trainbench::kernels;

namespace {

double seconds(const std::function<void()>& body) {
    const auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double bestSeconds(int repeats, const std::function<void()>& body) {
    body();  // first touches, thread pool wake-up
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < repeats; ++i) best = std::min(best, seconds(body));
    return best;
}

struct Times {
    double forward = std::numeric_limits<double>::infinity();
    double backward = std::numeric_limits<double>::infinity();
    double step = std::numeric_limits<double>::infinity();
};

using Projection = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;

// One round of y = project(x, w) without a graph, then with one and the backward of
// sum(y * upstream) (dx and dW) timed on its own; each time the best seen so far.
void timeRound(const Projection& project, const torch::Tensor& x, const torch::Tensor& w,
               const torch::Tensor& upstream, Times& t) {
    t.forward = std::min(t.forward, seconds([&] {
        torch::NoGradGuard no_grad;
        project(x, w);
    }));
    x.mutable_grad() = torch::Tensor();
    w.mutable_grad() = torch::Tensor();
    torch::Tensor y;
    const double recorded = seconds([&] { y = project(x, w); });
    const double backward = seconds([&] { y.backward(upstream); });
    t.backward = std::min(t.backward, backward);
    t.step = std::min(t.step, recorded + backward);
}

void row(const char* what, const Times& t, int64_t tokens) {
    std::printf("| %s | %.1f | %.1f | %.1f | %.0f |\n", what, t.forward * 1e3, t.backward * 1e3, t.step * 1e3,
                double(tokens) / t.step);
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t tokens = argc > 1 ? std::atoll(argv[1]) : 4096;
    const int64_t in = argc > 2 ? std::atoll(argv[2]) : 1024;
    const int64_t out = argc > 3 ? std::atoll(argv[3]) : 1024;
    const int repeats = argc > 4 ? std::atoi(argv[4]) : 5;
    if (argc > 5) at::set_num_threads(std::atoi(argv[5]));
    torch::manual_seed(0);
    const auto x = torch::randn({tokens, in}).requires_grad_(true);
    const auto w = (torch::randn({out, in}) / std::sqrt(double(in))).requires_grad_(true);
    const auto upstream = torch::randn({tokens, out});
    std::printf("x [%lld, %lld], W [%lld, %lld], fp32, %d threads, best of %d\n\n", (long long)tokens,
                (long long)in, (long long)out, (long long)in, at::get_num_threads(), repeats);

    std::printf("| projection | forward ms | backward ms | step ms | tokens/s (step) |\n|---|---|---|---|---|\n");
    const Projection fp32_linear = [](const torch::Tensor& a, const torch::Tensor& b) { return kernels::linear(a, b); };
    const Projection fp8_linear = [](const torch::Tensor& a, const torch::Tensor& b) { return fp8Linear(a, b); };
    // The two alternate round by round, so that both meet the same load on a shared machine.
    Times fp32, fp8, ignored;
    timeRound(fp32_linear, x, w, upstream, ignored);  // first touches, thread pool wake-up
    timeRound(fp8_linear, x, w, upstream, ignored);
    for (int i = 0; i < repeats; ++i) {
        timeRound(fp32_linear, x, w, upstream, fp32);
        timeRound(fp8_linear, x, w, upstream, fp8);
    }
    row("kernels::linear, fp32", fp32, tokens);
    row("kernels::fp8Linear (emulated)", fp8, tokens);
    std::printf("\nfp8 emulation / fp32: forward %.2fx, backward %.2fx, step %.2fx the time\n\n",
                fp8.forward / fp32.forward, fp8.backward / fp32.backward, fp8.step / fp32.step);

    // What the emulation adds: one quantise and dequantise per operand (the step does seven).
    const auto xd = x.detach(), wd = w.detach();
    std::printf("| part | ms |\n|---|---|\n");
    const Fp8Matrix xq = quantiseFp8(xd, Fp8Grouping::kRowTiles, Fp8ScaleRule::kPowerOfTwo, "x");
    std::printf("| quantise x, 1 x 128 tiles | %.2f |\n", 1e3 * bestSeconds(repeats, [&] {
                    quantiseFp8(xd, Fp8Grouping::kRowTiles, Fp8ScaleRule::kPowerOfTwo, "x");
                }));
    std::printf("| quantise x, 128 x 1 tiles | %.2f |\n", 1e3 * bestSeconds(repeats, [&] {
                    quantiseFp8(xd, Fp8Grouping::kColumnTiles, Fp8ScaleRule::kPowerOfTwo, "x");
                }));
    std::printf("| quantise W, 128 x 128 blocks | %.2f |\n", 1e3 * bestSeconds(repeats, [&] {
                    quantiseFp8(wd, Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, "W");
                }));
    std::printf("| dequantise x | %.2f |\n", 1e3 * bestSeconds(repeats, [&] { dequantiseFp8(xq); }));
    std::printf("\nkept for the backward: fp8 %lld bytes, fp32 %lld bytes\n", (long long)fp8LinearSavedBytes(tokens, in),
                (long long)(tokens * in * 4));
    return 0;
}
