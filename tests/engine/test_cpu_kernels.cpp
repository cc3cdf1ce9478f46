// The written-out CPU kernels against the composed ATen form they replace (autograd's own
// backward of plain tensor operations): fp64 to 1e-12, fp32 against fp64, every vector
// instruction set this CPU has giving the same bits, the layouts read in place (channel
// slices), empty groups, and the cases the kernels leave to ATen (bf16, autocast, switched off).
#include <QtTest/QtTest>

#include <ATen/autocast_mode.h>

#include <bit>
#include <cmath>
#include <mutex>
#include <set>
#include <stdexcept>

#include "cpu_paths_report.h"
#include "kernels/bf16_rounding.h"
#include "kernels/blas.h"
#include "kernels/causal_attention.h"
#include "kernels/expert_dispatch.h"
#include "kernels/cpu_kernels.h"
#include "kernels/gated_mlp.h"
#include "kernels/onednn_product.h"
#include "kernels/linear.h"
#include "kernels/parallel.h"
#include "kernels/product_precision.h"
#include "kernels/rms_norm.h"
#include "kernels/rotary.h"
#include "kernels/router.h"
#include "kernels/sum_of_squares.h"
#include "kernels/vector_math.h"
#include "model/gate.h"
#include "model/rotary.h"
#include "model/transformer.h"
#include "kernels/compute_scope.h"
#include "trainbench/presets.h"

using namespace trainbench;
using namespace trainbench::kernels;

namespace {

double relativeError(const torch::Tensor& a, const torch::Tensor& b) {
    if (b.numel() == 0) return a.numel() == 0 ? 0.0 : 1.0;
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() /
           std::max(b.to(torch::kFloat64).abs().max().item<double>(), 1e-30);
}

// The function's value and the gradients of sum(value * upstream) with respect to inputs.
struct Result {
    torch::Tensor value;
    std::vector<torch::Tensor> grads;
};

template <typename F>
Result evaluate(F f, std::vector<torch::Tensor> inputs, uint64_t seed = 5) {
    for (auto& x : inputs) x = x.detach().clone().requires_grad_(true);
    auto value = f(inputs);
    torch::manual_seed(seed);
    auto upstream = torch::randn(value.sizes(), torch::kFloat64).to(value.scalar_type());
    (value * upstream).sum().backward();
    Result r{value.detach(), {}};
    for (auto& x : inputs) r.grads.push_back(x.grad().defined() ? x.grad() : torch::zeros_like(x));
    return r;
}

void compare(const Result& got, const Result& want, double tolerance) {
    QVERIFY(got.value.sizes() == want.value.sizes());
    QVERIFY2(relativeError(got.value, want.value) < tolerance, qPrintable(QString::number(relativeError(got.value, want.value))));
    QCOMPARE(got.grads.size(), want.grads.size());
    for (size_t i = 0; i < got.grads.size(); ++i) {
        const double e = relativeError(got.grads[i], want.grads[i]);
        QVERIFY2(e < tolerance, qPrintable(QString("gradient %1: %2").arg(i).arg(e)));
    }
}

void compareBits(const Result& a, const Result& b) {
    QVERIFY(torch::equal(a.value, b.value));
    for (size_t i = 0; i < a.grads.size(); ++i) QVERIFY(torch::equal(a.grads[i], b.grads[i]));
}

// Evaluated with the kernels switched off: the composed form.
template <typename F>
Result composed(F f, std::vector<torch::Tensor> inputs) {
    setCpuKernelsEnabled(false);
    auto r = evaluate(f, std::move(inputs));
    setCpuKernelsEnabled(true);
    return r;
}

std::vector<torch::Tensor> toType(std::vector<torch::Tensor> xs, torch::ScalarType t) {
    for (auto& x : xs) x = x.to(t);
    return xs;
}

std::vector<VectorIsa> supportedIsas() {
    std::vector<VectorIsa> out;
    for (auto isa : {VectorIsa::Baseline, VectorIsa::Avx2, VectorIsa::Avx512})
        if (cpuSupports(isa)) out.push_back(isa);
    return out;
}

// The gated MLP written out with tensor operations, group by group.
torch::Tensor composedGatedMlp(const torch::Tensor& rows, const std::vector<torch::Tensor>& w,
                               const std::vector<int64_t>& counts) {
    std::vector<torch::Tensor> parts;
    int64_t start = 0;
    for (size_t e = 0; e < counts.size(); ++e) {
        auto x = rows.narrow(0, start, counts[e]);
        parts.push_back(torch::matmul(torch::silu(torch::matmul(x, w[3 * e].t())) * torch::matmul(x, w[3 * e + 2].t()),
                                      w[3 * e + 1].t()));
        start += counts[e];
    }
    return torch::cat(parts, 0);
}

torch::Tensor composedRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
    return x * torch::rsqrt(x.square().mean(-1, true) + eps) * w;
}

// q, k [B, T, h, D], v [B, T, h, Dv]: softmax(scale q k^T + causal mask) v, as [B, T, h, Dv].
torch::Tensor composedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale) {
    const int64_t T = q.size(1);
    auto scores = torch::matmul(q.transpose(1, 2), k.transpose(1, 2).transpose(-1, -2)) * scale;  // [B, h, T, T]
    auto masked = torch::ones({T, T}, torch::kBool).triu(1);
    auto p = scores.masked_fill(masked, -std::numeric_limits<double>::infinity()).softmax(-1);
    return torch::matmul(p, v.transpose(1, 2)).transpose(1, 2);
}

}  // namespace

class TestCpuKernels : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init() {
        setCpuKernelsEnabled(true);
        setVectorIsa(std::nullopt);
        setBf16Route(std::nullopt);
    }
    void cleanup() { setBf16Route(std::nullopt); }

    // Round to nearest, ties to even, NaN kept a NaN: bit for bit what c10::BFloat16 makes, in
    // every vector variant this CPU has, read through a row stride.
    void bf16RoundingIsTorchsConversion() {
        torch::manual_seed(21);
        const float specials[] = {1.0f + 0x1p-8f,  1.0f + 0x3p-8f, -(1.0f + 0x1p-8f), 1.0f + 0x1p-8f + 0x1p-20f,
                                  0x1.fffffep127f, 1e-40f,         -0.0f,             INFINITY,
                                  -INFINITY,       NAN,            0x1p-126f,         3.0f};
        auto x = torch::randn({7, 40});
        auto flat = x.view(-1);
        for (size_t i = 0; i < std::size(specials); ++i) flat[int64_t(i)] = specials[i];
        const int64_t rows = 7, cols = 33, ld = 40;  // 33 of each row's 40: a vector's tail too
        auto want = x.narrow(1, 0, cols).to(torch::kBFloat16).contiguous();
        for (VectorIsa isa : {VectorIsa::Baseline, VectorIsa::Avx2, VectorIsa::Avx512}) {
            if (!cpuSupports(isa)) continue;
            setVectorIsa(isa);
            std::vector<uint16_t> bits(size_t(rows * cols));
            std::vector<float> values(size_t(rows * cols));
            roundToBf16(x.data_ptr<float>(), rows, cols, ld, bits.data());
            roundToBf16Values(x.data_ptr<float>(), rows, cols, ld, values.data());
            const auto* expected = reinterpret_cast<const uint16_t*>(want.data_ptr());
            for (int64_t i = 0; i < rows * cols; ++i) {
                const bool nan = std::isnan(want.view(-1)[i].item<float>());
                QVERIFY2(nan ? std::isnan(values[size_t(i)]) && (bits[size_t(i)] & 0x7fff) > 0x7f80
                             : bits[size_t(i)] == expected[i],
                         qPrintable(QString("element %1: %2 against %3").arg(i).arg(bits[size_t(i)]).arg(expected[i])));
                QCOMPARE(std::bit_cast<uint32_t>(values[size_t(i)]), uint32_t(bits[size_t(i)]) << 16);
            }
            // Back to fp32 into a strided output: beta 0 writes over NaN, beta 2 adds.
            const int64_t ldc = cols + 2;
            auto c = torch::full({rows, ldc}, std::nan(""));
            widenBf16(bits.data(), rows, cols, cols, 0.0f, c.data_ptr<float>(), ldc);
            auto widened = torch::from_blob(values.data(), {rows, cols}).clone();
            QVERIFY(torch::equal(c.narrow(1, 0, cols).nan_to_num(0, 0, 0), widened.nan_to_num(0, 0, 0)));
            auto c0 = torch::randn({rows, ldc});
            c = c0.clone();
            widenBf16(bits.data(), rows, cols, cols, 2.0f, c.data_ptr<float>(), ldc);
            QVERIFY(torch::equal(c.narrow(1, 0, cols).nan_to_num(0, 0, 0),
                                 (widened + 2.0f * c0.narrow(1, 0, cols)).nan_to_num(0, 0, 0)));
            QVERIFY(torch::equal(c.narrow(1, cols, 2), c0.narrow(1, cols, 2)));  // the stride's gap untouched
        }
        setVectorIsa(std::nullopt);
    }

    // Under bf16 products gemm rounds its operands to bf16 and accumulates in fp32, by either
    // route (every transpose, strided operands, alpha and beta; the fp64 product of the rounded
    // operands is the reference): the fp32 GEMM's result to fp32's precision, oneDNN's to
    // bf16's (it rounds its result too). Outside the scope, the plain fp32 product.
    void bf16ProductsRoundTheOperandsAndAccumulateInFp32() {
        torch::manual_seed(3);
        const int64_t m = 37, n = 29, k = 70, pad = 3;
        QVERIFY(bf16Route(1.0) == Bf16Route::kRoundedFp32);  // small products: the fp32 GEMM
        QCOMPARE(bf16Route(kOneDnnFrom), oneDnnBf16Fast() ? Bf16Route::kOneDnn : Bf16Route::kRoundedFp32);
        for (Bf16Route route : {Bf16Route::kOneDnn, Bf16Route::kRoundedFp32}) {
            if (route == Bf16Route::kOneDnn && !oneDnnBf16Runs()) continue;  // ATen refuses this CPU
            setBf16Route(route);
            QVERIFY(bf16Route(1.0) == route);
            const bool onednn = route == Bf16Route::kOneDnn;
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    auto a = torch::randn({ta ? k : m, (ta ? m : k) + pad});
                    auto b = torch::randn({tb ? n : k, (tb ? k : n) + pad});
                    auto c0 = torch::randn({m, n});
                    auto op = [&](const torch::Tensor& t, bool trans, int64_t cols) {
                        auto stored = t.narrow(1, 0, cols);
                        return trans ? stored.t() : stored;
                    };
                    auto A = op(a, ta, ta ? m : k), B = op(b, tb, tb ? k : n);
                    auto rounded = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat64); };
                    auto product = 0.5 * torch::matmul(rounded(A), rounded(B));
                    auto want = (onednn ? rounded(product) : product) + 2.0 * c0.to(torch::kFloat64);
                    auto exact = 0.5 * torch::matmul(A.to(torch::kFloat64), B.to(torch::kFloat64)) +
                                 2.0 * c0.to(torch::kFloat64);
                    auto c = c0.clone();
                    {
                        ProductPrecisionScope bf16(ProductPrecision::kBf16);
                        gemm(ta, tb, m, n, k, 0.5f, a.data_ptr<float>(), a.size(1), b.data_ptr<float>(), b.size(1),
                             2.0f, c.data_ptr<float>(), n);
                    }
                    // oneDNN's own order of summation may round a result the other way: one
                    // bf16 place at most.
                    const double tolerance = onednn ? 1.0 / 128 : 1e-6;
                    QVERIFY2(relativeError(c, want) < tolerance, qPrintable(QString::number(relativeError(c, want))));
                    QVERIFY(relativeError(c, exact) > 1e-4);  // the operands really were rounded
                    c = c0.clone();
                    gemm(ta, tb, m, n, k, 0.5f, a.data_ptr<float>(), a.size(1), b.data_ptr<float>(), b.size(1), 2.0f,
                         c.data_ptr<float>(), n);
                    QVERIFY(relativeError(c, exact) < 1e-6);  // the scope has ended
                }
        }
    }

    // The precision reaches gemmChains' threads and parallelFor's workers, and a node's backward
    // run outside the scope (as autograd runs it) still rounds: the linear node's gradients are
    // round(g) round(w) and round(g)^T round(x).
    void bf16ProductsReachTheThreadsAndTheBackward() {
        const int before = at::get_num_threads();
        at::set_num_threads(2);
        torch::manual_seed(4);
        auto rounded = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat64); };
        const int64_t n = 512, in = 96, out = 80;
        auto x = torch::randn({n, in}), w = torch::randn({out, in}), g = torch::randn({n, out});
        auto gx = torch::empty({n, in}), gw = torch::empty({out, in});
        {
            ProductPrecisionScope bf16(ProductPrecision::kBf16);
            gemmChains({{{false, false, n, in, out, 1.0f, g.data_ptr<float>(), out, w.data_ptr<float>(), in, 0.0f,
                          gx.data_ptr<float>(), in}},
                        {{true, false, out, in, n, 1.0f, g.data_ptr<float>(), out, x.data_ptr<float>(), in, 0.0f,
                          gw.data_ptr<float>(), in}}});
            std::mutex mutex;
            std::set<ProductPrecision> seen;
            parallelFor(0, 2, 1, [&](int64_t, int64_t) {
                std::lock_guard lock(mutex);
                seen.insert(productPrecision());
            });
            QCOMPARE(seen, std::set<ProductPrecision>{ProductPrecision::kBf16});
        }
        QVERIFY(relativeError(gx, torch::matmul(rounded(g), rounded(w))) < 1e-6);
        QVERIFY(relativeError(gw, torch::matmul(rounded(g).t(), rounded(x))) < 1e-6);

        auto xv = x.clone().requires_grad_(true), wv = w.clone().requires_grad_(true);
        torch::Tensor y;
        {
            ProductPrecisionScope bf16(ProductPrecision::kBf16);
            y = kernels::linear(xv, wv);
        }
        QCOMPARE(y.scalar_type(), torch::kFloat32);  // fp32 out, unlike autocast's bf16
        QVERIFY(relativeError(y, torch::matmul(rounded(x), rounded(w).t())) < 1e-6);
        (y * g).sum().backward();
        QVERIFY(relativeError(xv.grad(), torch::matmul(rounded(g), rounded(w))) < 1e-6);
        QVERIFY(relativeError(wv.grad(), torch::matmul(rounded(g).t(), rounded(x))) < 1e-6);
        QVERIFY(relativeError(xv.grad(), torch::matmul(g, w)) > 1e-4);
        at::set_num_threads(before);
    }

    void gemmTakesEveryTransposeAgainstMatmul() {
        torch::manual_seed(1);
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                const int64_t m = 5, n = 7, k = 3;
                auto a = ta ? torch::randn({k, m}, torch::kFloat64) : torch::randn({m, k}, torch::kFloat64);
                auto b = tb ? torch::randn({n, k}, torch::kFloat64) : torch::randn({k, n}, torch::kFloat64);
                auto c = torch::randn({m, n}, torch::kFloat64);
                auto want = 0.5 * torch::matmul(ta ? a.t() : a, tb ? b.t() : b) + 2.0 * c;
                gemm(ta, tb, m, n, k, 0.5, a.data_ptr<double>(), a.size(1), b.data_ptr<double>(), b.size(1), 2.0,
                     c.data_ptr<double>(), n);
                QVERIFY(relativeError(c, want) < 1e-15);
            }
        // No inner dimension: C = beta C, and beta 0 clears NaN.
        auto c = torch::full({2, 3}, std::nan(""), torch::kFloat32);
        gemm(false, false, 2, 3, 0, 1.0f, nullptr, 0, nullptr, 3, 0.0f, c.data_ptr<float>(), 3);
        QVERIFY(torch::equal(c, torch::zeros({2, 3})));
    }

    // Two intra-op threads whatever the machine's cores: OpenMP makes them on one core too.
    void parallelForSplitsAcrossTheIntraOpThreads() {
        QVERIFY(parallelForSplits());
        const int before = at::get_num_threads();
        at::set_num_threads(2);
        std::mutex mutex;
        std::set<int> threads;
        std::vector<int> seen(10, 0);
        parallelFor(0, 10, 1, [&](int64_t first, int64_t last) {
            std::lock_guard lock(mutex);
            threads.insert(at::get_thread_num());
            for (int64_t i = first; i < last; ++i) ++seen[size_t(i)];
        });
        QCOMPARE(threads.size(), size_t(2));
        QCOMPARE(seen, std::vector<int>(10, 1));
        // At most the grain: one chunk on the calling thread.
        threads.clear();
        parallelFor(0, 4, 4, [&](int64_t first, int64_t last) {
            QCOMPARE(first, int64_t(0));
            QCOMPARE(last, int64_t(4));
            threads.insert(at::get_thread_num());
        });
        QCOMPARE(threads, std::set<int>{0});
        bool raised = false;
        try {
            parallelFor(0, 8, 1, [&](int64_t first, int64_t) {
                if (first > 0) throw std::runtime_error("chunk");
            });
        } catch (const std::runtime_error&) {
            raised = true;
        }
        QVERIFY(raised);
        at::set_num_threads(before);
    }

    // Chains large enough to go one per thread (two equal ones, a two-product chain adding into
    // its first product's output), and a set that one chain dominates (left to BLAS): every
    // output the products of fp64 matmul.
    void gemmChainsMatchMatmulSplitOrNot() {
        const int before = at::get_num_threads();
        at::set_num_threads(2);
        torch::manual_seed(11);
        auto opts = torch::TensorOptions().dtype(torch::kFloat64);
        const int64_t n = 512, in = 64, out = 48;
        auto g = torch::randn({n, out}, opts), w = torch::randn({out, in}, opts), x = torch::randn({n, in}, opts);
        auto w2 = torch::randn({out, in}, opts), g2 = torch::randn({n, out}, opts);
        for (int64_t rows : {n, int64_t(8)}) {
            auto gx = torch::full({rows, in}, std::nan(""), opts), gw = torch::full({out, in}, std::nan(""), opts);
            std::vector<std::vector<Product<double>>> chains{
                // gx = g w + g2 w2 over the first `rows` rows
                {{false, false, rows, in, out, 1.0, g.data_ptr<double>(), out, w.data_ptr<double>(), in, 0.0,
                  gx.data_ptr<double>(), in},
                 {false, false, rows, in, out, 1.0, g2.data_ptr<double>(), out, w2.data_ptr<double>(), in, 1.0,
                  gx.data_ptr<double>(), in}},
                // gw = g^T x over all rows
                {{true, false, out, in, n, 1.0, g.data_ptr<double>(), out, x.data_ptr<double>(), in, 0.0,
                  gw.data_ptr<double>(), in}}};
            gemmChains(chains);
            auto want_x = torch::matmul(g.narrow(0, 0, rows), w) + torch::matmul(g2.narrow(0, 0, rows), w2);
            QVERIFY2(relativeError(gx, want_x) < 1e-13, qPrintable(QString::number(relativeError(gx, want_x))));
            QVERIFY(relativeError(gw, torch::matmul(g.t(), x)) < 1e-13);
        }
        gemmChains(std::vector<std::vector<Product<double>>>{});  // nothing to do
        at::set_num_threads(before);
    }

    void expApproxIsWithinTwoUlpOfExp() {
        double worst = 0;
        for (int i = 0; i <= 200000; ++i) {
            const float x = -87.0f + 175.0f * float(i) / 200000.0f;
            const double want = std::exp(double(x));
            worst = std::max(worst, std::abs(double(expApprox(x)) - want) / want);
        }
        QVERIFY2(worst < 2.5e-7, qPrintable(QString::number(worst)));
        QVERIFY(std::isfinite(expApprox(1000.0f)) && expApprox(1000.0f) > 1e38f);
        QVERIFY(expApprox(-1000.0f) >= 0.0f && expApprox(-1000.0f) < 1.3e-38f);
        QVERIFY(sigmoid(-200.0f) >= 0.0f && sigmoid(-200.0f) < 1e-37f);
        QCOMPARE(sigmoid(200.0f), 1.0f);
        QVERIFY(std::isnan(expApprox(std::nanf(""))));
    }

    void linearMatchesComposedInFp64AndFp32() {
        torch::manual_seed(2);
        auto x = torch::randn({3, 5, 7}, torch::kFloat64), w = torch::randn({4, 7}, torch::kFloat64);
        auto f = [](std::vector<torch::Tensor>& in) { return kernels::linear(in[0], in[1]); };
        const auto want = composed(f, {x, w});
        compare(evaluate(f, {x, w}), want, 1e-12);
        compare(evaluate(f, toType({x, w}, torch::kFloat32)), want, 1e-5);
        // A transposed input is read through a copy, the weight as it is.
        auto xt = torch::randn({7, 6}, torch::kFloat64);
        auto g = [](std::vector<torch::Tensor>& in) { return kernels::linear(in[0].t(), in[1]); };
        compare(evaluate(g, {xt, w}), composed(g, {xt, w}), 1e-12);
    }

    void gatedMlpMatchesComposedWithAnEmptyGroup() {
        torch::manual_seed(3);
        const int64_t d = 6, I = 5;
        const std::vector<int64_t> counts{3, 0, 5, 1};
        std::vector<torch::Tensor> inputs{torch::randn({9, d}, torch::kFloat64)};
        for (size_t e = 0; e < counts.size(); ++e) {
            inputs.push_back(torch::randn({I, d}, torch::kFloat64) * 0.7);
            inputs.push_back(torch::randn({d, I}, torch::kFloat64) * 0.7);
            inputs.push_back(torch::randn({I, d}, torch::kFloat64) * 0.7);
        }
        auto kernel = [&](std::vector<torch::Tensor>& in) {
            const std::vector<torch::Tensor> w(in.begin() + 1, in.end());
            return gatedMlp(in[0], w, counts);
        };
        auto reference = [&](std::vector<torch::Tensor>& in) {
            return composedGatedMlp(in[0], std::vector<torch::Tensor>(in.begin() + 1, in.end()), counts);
        };
        QVERIFY(gatedMlpTakes(inputs[0], std::vector<torch::Tensor>(inputs.begin() + 1, inputs.end())));
        const auto want = evaluate(reference, inputs);
        const auto got = evaluate(kernel, inputs);
        compare(got, want, 1e-12);
        for (int i = 0; i < 3; ++i) QVERIFY(torch::equal(got.grads[4 + i], torch::zeros_like(inputs[4 + i])));
        // fp32: the vectorised sigmoid, in every instruction set this CPU has, bit for bit alike.
        std::optional<Result> first;
        for (auto isa : supportedIsas()) {
            setVectorIsa(isa);
            auto r = evaluate(kernel, toType(inputs, torch::kFloat32));
            compare(r, want, 2e-6);
            if (first) compareBits(r, *first);
            else first = r;
        }
        // Large activations saturate the sigmoid without overflow.
        auto big = inputs;
        big[0] = big[0] * 200.0;
        compare(evaluate(kernel, toType(big, torch::kFloat32)), evaluate(reference, big), 1e-5);
    }

    void gatedMlpRefusesCountsThatDoNotAddUp() {
        auto x = torch::randn({4, 2});
        std::vector<torch::Tensor> w{torch::randn({3, 2}), torch::randn({2, 3}), torch::randn({3, 2})};
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gatedMlp(x, w, {3}));
    }

    void rmsNormMatchesComposedAndReadsAChannelSlice() {
        torch::manual_seed(4);
        const double eps = 1e-6;
        // 150 rows: three blocks of the weight gradient's partial sums, the last one short.
        auto x = torch::randn({3, 50, 20}, torch::kFloat64), w = torch::rand({20}, torch::kFloat64) + 0.5;
        auto kernel = [&](std::vector<torch::Tensor>& in) { return rmsNorm(in[0], in[1], eps); };
        auto reference = [&](std::vector<torch::Tensor>& in) { return composedRmsNorm(in[0], in[1], eps); };
        const auto want = evaluate(reference, {x, w});
        compare(evaluate(kernel, {x, w}), want, 1e-12);
        std::optional<Result> first;
        for (auto isa : supportedIsas()) {
            setVectorIsa(isa);
            auto r = evaluate(kernel, toType({x, w}, torch::kFloat32));
            compare(r, want, 2e-6);
            if (first) compareBits(r, *first);
            else first = r;
        }
        // The first 20 of 27 channels, as the latent norm reads wkv_a's output.
        auto wide = torch::randn({3, 50, 27}, torch::kFloat64);
        auto sliced = [&](std::vector<torch::Tensor>& in) { return rmsNorm(in[0].narrow(-1, 0, 20), in[1], eps); };
        auto sliced_reference = [&](std::vector<torch::Tensor>& in) {
            return composedRmsNorm(in[0].narrow(-1, 0, 20), in[1], eps);
        };
        compare(evaluate(sliced, {wide, w}), evaluate(sliced_reference, {wide, w}), 1e-12);
        QVERIFY(rmsNormTakes(wide.narrow(-1, 0, 20), w));
    }

    // MLA's form: the key's n channels from kv (its values after them), its r channels the
    // shared k_pe; against the key assembled with cat and expand and attention by matmul.
    void causalAttentionMatchesComposedAcrossQueryBlocks_data() {
        QTest::addColumn<int>("nope");
        QTest::addColumn<int>("rope");
        QTest::newRow("n 5, r 3") << 5 << 3;
        QTest::newRow("no shared part") << 4 << 0;
        QTest::newRow("shared part only") << 0 << 6;
    }
    void causalAttentionMatchesComposedAcrossQueryBlocks() {
        QFETCH(int, nope);
        QFETCH(int, rope);
        torch::manual_seed(6);
        // T 130: three query blocks, the last of two rows.
        const int64_t B = 2, T = 130, H = 3, n = nope, r = rope, Dv = 4;
        const double scale = 0.37;
        auto q = torch::randn({B, T, H, n + r}, torch::kFloat64), kv = torch::randn({B, T, H, n + Dv}, torch::kFloat64);
        auto k_pe = torch::randn({B, T, 1, r}, torch::kFloat64);
        auto kernel = [&](std::vector<torch::Tensor>& in) { return causalAttention(in[0], in[1], in[2], n, scale); };
        auto reference = [&](std::vector<torch::Tensor>& in) {
            auto key = torch::cat({in[1].narrow(-1, 0, n), in[2].expand({B, T, H, r})}, -1);
            return composedAttention(in[0], key, in[1].narrow(-1, n, Dv), scale);
        };
        QVERIFY(causalAttentionTakes(q, kv, k_pe, n));
        const auto want = evaluate(reference, {q, kv, k_pe});
        compare(evaluate(kernel, {q, kv, k_pe}), want, 1e-12);
        std::optional<Result> first;
        for (auto isa : supportedIsas()) {
            setVectorIsa(isa);
            auto r32 = evaluate(kernel, toType({q, kv, k_pe}, torch::kFloat32));
            compare(r32, want, 5e-6);
            if (first) compareBits(r32, *first);
            else first = r32;
        }
        // The first token attends to itself alone: its output is its own value.
        auto out = causalAttention(q, kv, k_pe, n, scale);
        QVERIFY(torch::allclose(out.select(1, 0), kv.narrow(-1, n, Dv).select(1, 0), 0, 1e-14));
        // A k_pe per head, or one whose width is not q's remainder, is not this form.
        QVERIFY(!causalAttentionTakes(q, kv, k_pe.expand({B, T, H, r}), n));
        QVERIFY(!causalAttentionTakes(q, kv, torch::randn({B, T, 1, r + 1}, torch::kFloat64), n));
    }

    void rotaryTurnsPairsAndTheModelsTableAgrees() {
        torch::manual_seed(8);
        const int64_t B = 2, T = 7, H = 3, skip = 4, P = 3;
        // A channel slice of a wider tensor, as the key's rotary part is of wkv_a's output.
        auto wide = torch::randn({B, T, H, skip + 2 * P + 5}, torch::kFloat64);
        auto angles = torch::arange(T, torch::kFloat64).unsqueeze(1) * torch::tensor({1.0, 0.3, 0.01}, torch::kFloat64);
        auto cos = angles.cos(), sin = angles.sin();
        auto kernel = [&](std::vector<torch::Tensor>& in) { return rotate(in[0].narrow(-1, 2, skip + 2 * P), cos, sin, skip); };
        auto reference = [&](std::vector<torch::Tensor>& in) {
            auto x = in[0].narrow(-1, 2, skip + 2 * P);
            auto pairs = x.narrow(-1, skip, 2 * P).unflatten(-1, {P, 2});
            auto a = pairs.select(-1, 0), b = pairs.select(-1, 1);
            auto c = cos.view({1, T, 1, P}), s = sin.view({1, T, 1, P});
            auto turned = torch::stack({a * c - b * s, a * s + b * c}, -1).flatten(-2);
            return torch::cat({x.narrow(-1, 0, skip), turned}, -1);
        };
        QVERIFY(rotaryTakes(wide.narrow(-1, 2, skip + 2 * P), cos, sin, skip));
        compare(evaluate(kernel, {wide}), evaluate(reference, {wide}), 1e-14);
        // The model's table, through the kernel and through its complex multiply, in fp32.
        ModelConfig model = builtinTinyConfig().model;
        RotaryTable table(model);
        const int64_t rope = model.qk_rope_head_dim, nope = model.qk_nope_head_dim;
        auto q = torch::randn({B, T, H, nope + rope});
        auto through = [&](std::vector<torch::Tensor>& in) { return table.apply(in[0], nope); };
        compare(evaluate(through, {q}), composed(through, {q}), 1e-6);
    }

    // The router against the gate's composed form (kernels off), through the gate itself: the
    // weights, the scores and the balance loss and their gradients with respect to the tokens
    // and the gate's weight, the same experts chosen; with a bias and the top-two group rule,
    // the max rule without, softmax without groups.
    void routerMatchesTheComposedGate_data() {
        QTest::addColumn<QString>("score");
        QTest::addColumn<bool>("with_bias");
        QTest::addColumn<int>("groups");
        QTest::addColumn<int>("limited");
        QTest::addColumn<int>("topk");
        QTest::addColumn<int>("sequences");
        QTest::newRow("sigmoid, bias, 4 groups, 2 kept, aux") << "sigmoid" << true << 4 << 2 << 3 << 3;
        QTest::newRow("sigmoid, max rule, aux") << "sigmoid" << false << 2 << 1 << 2 << 2;
        QTest::newRow("softmax, one group, no aux") << "softmax" << false << 1 << 1 << 2 << 0;
        QTest::newRow("softmax, bias, groups, aux") << "softmax" << true << 4 << 3 << 4 << 5;
    }
    void routerMatchesTheComposedGate() {
        QFETCH(QString, score);
        QFETCH(bool, with_bias);
        QFETCH(int, groups);
        QFETCH(int, limited);
        QFETCH(int, topk);
        QFETCH(int, sequences);
        ModelConfig c;
        c.dim = 6;
        c.n_routed_experts = 16;
        c.n_expert_groups = groups;
        c.n_limited_groups = limited;
        c.n_activated_experts = topk;
        c.score_func = score.toStdString();
        c.gate_bias = with_bias;
        c.route_scale = 1.7;
        torch::manual_seed(11);
        Gate gate(c);
        if (with_bias) {
            torch::NoGradGuard no_grad;
            gate->bias.copy_(torch::randn({16}) * 0.3);  // enough to change some choices
        }
        const int64_t N = 30;
        const double alpha = 0.01;
        auto x = torch::randn({N, 6}, torch::kFloat64), w = torch::randn({16, 6}, torch::kFloat64);
        torch::Tensor chosen;
        auto routed = [&](std::vector<torch::Tensor>& in) {
            gate->weight = in[1];
            Routing r = gate(in[0], sequences, alpha);
            chosen = r.indices;
            std::vector<torch::Tensor> parts{r.weights.flatten(), r.scores.flatten()};
            if (sequences > 0) parts.push_back(r.seq_aux);
            return torch::cat(parts);
        };
        QVERIFY(kernels::routerTakes(torch::zeros({N, 16}, torch::kFloat64), gate->bias,
                                     {topk, groups, limited, score == "sigmoid", 1.7, sequences, alpha}));
        const auto want = composed(routed, {x, w});
        const auto want_chosen = chosen.clone();
        compare(evaluate(routed, {x, w}), want, 1e-12);
        QVERIFY(torch::equal(chosen, want_chosen));
        // fp32: against the fp64 composed values, the same experts.
        gate->to(torch::kFloat32);
        compare(evaluate(routed, toType({x, w}, torch::kFloat32)), want, 2e-6);
        QVERIFY(torch::equal(chosen, want_chosen));
        // The choice is made on score plus bias: with a bias some token's experts are not its
        // top scores (else the bias would be untested).
        if (with_bias) {
            gate->to(torch::kFloat64);
            gate->weight = w;
            Routing r = gate(x);
            auto by_score = std::get<1>(r.scores.topk(topk, -1));
            QVERIFY(!torch::equal(std::get<0>(r.indices.sort(-1)), std::get<0>(by_score.sort(-1))));
        }
    }

    // The counting sort against a stable sort, with an expert that gets no row; dispatch and
    // combine against index_select and index_add, values and gradients, fp64 and fp32.
    void expertDispatchMatchesIndexSelectAndIndexAdd() {
        torch::manual_seed(12);
        const int64_t N = 37, k = 3, E = 7, d = 10;
        std::vector<torch::Tensor> choices;  // k distinct of experts 0..5 per token: 6 gets none
        for (int64_t t = 0; t < N; ++t) choices.push_back(torch::randperm(6).narrow(0, 0, k));
        const auto indices = torch::stack(choices);
        const auto order = sortByExpert(indices, E);
        const auto flat = indices.reshape({-1});
        const auto sorted = std::get<1>(flat.sort(/*stable=*/true, 0, false));
        QVERIFY(torch::equal(order.slot_of, sorted));
        QVERIFY(torch::equal(order.token_of, sorted.div(k, "floor")));
        QVERIFY(torch::equal(order.counts, torch::bincount(flat, {}, E)));
        QCOMPARE(order.counts[6].item<int64_t>(), int64_t(0));
        QVERIFY(torch::equal(order.slot_of.index_select(0, order.row_of), torch::arange(N * k)));

        // The experts' stand-in: each row scaled by its own factors, so every row's gradient differs.
        auto kernel = [&](std::vector<torch::Tensor>& in) {
            auto rows = dispatchRows(in[0], order) * in[1];
            return combineRows(in[0] * 0.5, rows, in[2], order);
        };
        auto reference = [&](std::vector<torch::Tensor>& in) {
            auto rows = in[0].index_select(0, order.token_of) * in[1];
            auto weights = in[2].reshape({-1}).index_select(0, order.slot_of).unsqueeze(1);
            return (in[0] * 0.5).index_add(0, order.token_of, rows * weights);
        };
        auto x = torch::randn({N, d}, torch::kFloat64), factors = torch::randn({N * k, d}, torch::kFloat64);
        auto w = torch::rand({N, k}, torch::kFloat64);
        QVERIFY(expertDispatchTakes(x, w, indices));
        const auto want = evaluate(reference, {x, factors, w});
        compare(evaluate(kernel, {x, factors, w}), want, 1e-13);
        compare(evaluate(kernel, toType({x, factors, w}, torch::kFloat32)), want, 2e-6);
        // Not taken: mixed dtypes (bf16 autocast's case) or indices of another type.
        QVERIFY(!expertDispatchTakes(x, w.to(torch::kFloat32), indices));
        QVERIFY(!expertDispatchTakes(x, w, indices.to(torch::kInt32)));
    }

    void sumOfSquaresInFp64OverBlocks() {
        torch::manual_seed(7);
        // 200,003 elements: four blocks of partial sums, the last one short, and a tail of lanes.
        auto x = torch::randn({200003}, torch::kFloat64);
        const double want = (x * x).sum().item<double>();
        QVERIFY(std::abs(sumOfSquares(x) - want) / want < 1e-13);
        auto xf = x.to(torch::kFloat32);
        const double want_f = (xf.to(torch::kFloat64) * xf.to(torch::kFloat64)).sum().item<double>();
        std::optional<double> first;
        for (auto isa : supportedIsas()) {
            setVectorIsa(isa);
            const double got = sumOfSquares(xf);
            QVERIFY(std::abs(got - want_f) / want_f < 1e-13);
            if (first) QCOMPARE(got, *first);
            else first = got;
        }
        QCOMPARE(sumOfSquares(torch::zeros({0})), 0.0);
        QVERIFY(!sumOfSquaresTakes(x.narrow(0, 0, 200001).view({-1, 3}).t()));
        QVERIFY(!sumOfSquaresTakes(x.to(torch::kBFloat16)));
    }

    // The whole model through the kernels against the composed form: the loss and every
    // parameter's gradient, in fp64 (to 1e-10) and fp32, with the query LoRA, an odd no-rope
    // head width (the split path of the query), and the softmax router without groups.
    void theModelsLossAndGradientsAreTheComposedForms_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<bool>("variant");
        QTest::newRow("fp64, the tiny preset") << int(torch::kFloat64) << false;
        QTest::newRow("fp32, the tiny preset") << int(torch::kFloat32) << false;
        QTest::newRow("fp64, odd nope width, softmax router, no query LoRA") << int(torch::kFloat64) << true;
    }
    void theModelsLossAndGradientsAreTheComposedForms() {
        QFETCH(int, dtype);
        QFETCH(bool, variant);
        const auto type = static_cast<torch::ScalarType>(dtype);
        ModelConfig c = builtinTinyConfig().model;
        if (variant) {
            c.qk_nope_head_dim = 15;
            c.q_lora_rank = 0;
            c.score_func = "softmax";
            c.gate_bias = false;
            c.n_expert_groups = 1;
            c.n_limited_groups = 1;
        }
        torch::manual_seed(9);
        Transformer model(c);
        initializeWeights(model, 11);
        model->to(type);
        auto tokens = torch::randint(0, c.vocab_size, {3, 70}, torch::kInt64);
        auto targets = torch::randint(0, c.vocab_size, {3, 70}, torch::kInt64);
        auto run = [&](bool kernels) {
            setCpuKernelsEnabled(kernels);
            model->zero_grad();
            LossParts parts = model->loss(tokens, targets);
            (parts.token_loss_sum + parts.aux_loss_sum).backward();
            setCpuKernelsEnabled(true);
            std::vector<torch::Tensor> grads;
            for (const auto& p : model->parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
            return std::pair{parts.token_loss_sum.item<double>(), grads};
        };
        const auto [loss_kernels, grads_kernels] = run(true);
        const auto [loss_composed, grads_composed] = run(false);
        const double tolerance = type == torch::kFloat64 ? 1e-10 : 2e-5;
        QVERIFY2(std::abs(loss_kernels - loss_composed) <= tolerance * std::abs(loss_composed),
                 qPrintable(QString("%1 vs %2").arg(loss_kernels, 0, 'g', 17).arg(loss_composed, 0, 'g', 17)));
        const auto names = model->named_parameters().keys();
        for (size_t i = 0; i < grads_kernels.size(); ++i) {
            const double e = relativeError(grads_kernels[i], grads_composed[i]);
            // fp32 gradients of a few thousand summed terms: relative to each tensor's largest.
            QVERIFY2(e < (type == torch::kFloat64 ? 1e-9 : 5e-5), qPrintable(QString("%1: %2").arg(names[i].c_str()).arg(e)));
        }
    }

    // The whole model in bf16 on the CPU: the kernels' bf16 products against ATen's autocast
    // form (the kernels off): the loss within bf16's rounding, away from fp32's, every gradient
    // fp32. The two round different things (autocast also rounds every product's output to
    // bf16), so they agree to bf16's precision, not more.
    void theModelsBf16ProductsTrackTheAutocastForm() {
        ModelConfig c = builtinTinyConfig().model;
        torch::manual_seed(9);
        Transformer model(c);
        initializeWeights(model, 11);
        auto tokens = torch::randint(0, c.vocab_size, {3, 40}, torch::kInt64);
        auto targets = torch::randint(0, c.vocab_size, {3, 40}, torch::kInt64);
        bool all_fp32 = true;
        auto run = [&](bool kernels, bool bf16) {
            setCpuKernelsEnabled(kernels);
            model->zero_grad();
            LossParts parts = [&] {
                ComputeScope scope(c10::kCPU, bf16 ? ComputePrecision::kBf16 : ComputePrecision::kFp32);
                return model->loss(tokens, targets);
            }();
            (parts.token_loss_sum + parts.aux_loss_sum).backward();
            setCpuKernelsEnabled(true);
            std::vector<torch::Tensor> grads;
            for (const auto& p : model->parameters()) {
                all_fp32 = all_fp32 && (!p.grad().defined() || p.grad().scalar_type() == torch::kFloat32);
                grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
            }
            return std::pair{parts.token_loss_sum.item<double>() / double(tokens.numel()), grads};
        };
        const auto [loss_fp32, grads_fp32] = run(true, false);
        const auto [loss_kernels, grads_kernels] = run(true, true);
        const auto [loss_autocast, grads_autocast] = run(false, true);
        QVERIFY(all_fp32);
        QVERIFY(ComputeScope::active(c10::kCPU) == ComputePrecision::kFp32);
        QVERIFY2(std::abs(loss_kernels - loss_autocast) < 1e-2 * loss_autocast,
                 qPrintable(QString("%1 vs %2").arg(loss_kernels, 0, 'g', 10).arg(loss_autocast, 0, 'g', 10)));
        QVERIFY(std::abs(loss_kernels - loss_fp32) > 1e-7 * loss_fp32);  // the products were rounded
        // Each gradient no further from fp32's than autocast's is (the router's, a difference of
        // nearly equal scores, is 20-30 % off in both).
        const auto names = model->named_parameters().keys();
        for (size_t i = 0; i < grads_kernels.size(); ++i) {
            const double ours = relativeError(grads_kernels[i], grads_fp32[i]);
            const double autocast = relativeError(grads_autocast[i], grads_fp32[i]);
            QVERIFY2(ours <= 1.25 * autocast + 1e-3,
                     qPrintable(QString("%1: %2 from fp32, autocast %3").arg(names[i].c_str()).arg(ours).arg(autocast)));
        }
    }

    void leavesBf16AutocastAndTheSwitchToAten() {
        auto x = torch::randn({4, 3}), w = torch::randn({2, 3});
        QVERIFY(cpuKernelsTake({&x, &w}));
        auto xb = x.to(torch::kBFloat16), wb = w.to(torch::kBFloat16);
        QVERIFY(!cpuKernelsTake({&xb, &wb}));
        auto xd = x.to(torch::kFloat64);
        QVERIFY(!cpuKernelsTake({&xd, &w}));  // mixed dtypes
        {
            at::autocast::set_autocast_enabled(at::kCPU, true);
            at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
            const bool taken = cpuKernelsTake({&x, &w});
            auto y = kernels::linear(x, w);  // at::linear under autocast: bf16
            at::autocast::set_autocast_enabled(at::kCPU, false);
            at::autocast::clear_cache();
            QVERIFY(!taken);
            QCOMPARE(y.scalar_type(), torch::kBFloat16);
        }
        setCpuKernelsEnabled(false);
        QVERIFY(!cpuKernelsTake({&x, &w}));
        setCpuKernelsEnabled(true);
    }
};

QTEST_APPLESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"
