// The CUDA fp8 path (kernels/fp8_linear_cuda.h) where a CPU can check it, and against the CPU
// emulation where a GPU of compute capability 9.0 is present:
//   - its tensor-op quantiser, run on CPU tensors, against kernels::quantiseFp8 (fp8_blocks.h)
//     bit for bit: every grouping and scale rule, partial edge groups, magnitudes from the
//     subnormals to fp32's largest, bf16 input, the same refusal of NaN and infinities;
//   - the scale layouts handed to at::_scaled_mm_v2, by hand on small shapes;
//   - each product's operands as the kernel would take them (shapes and strides as ATen 2.11's
//     ScaledBlas.cpp requires them), multiplied here in fp64 by a reading of the layouts written
//     in this file, against fp8Linear's y, dx and dW: the whole path but cuBLASLt itself;
//   - fp8CudaUnsupportedReason on a machine without CUDA;
//   - on an SM90 GPU only (skipped elsewhere): fp8LinearCuda against fp8Linear.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/fp8_blocks.h"
#include "kernels/fp8_linear.h"
#include "kernels/fp8_linear_cuda.h"
#include "fp8_cuda_comparison.h"

using namespace trainbench;
using namespace trainbench::kernels;
using at::blas::ScalingType;

namespace {

uint32_t bitsOf(float v) {
    uint32_t b = 0;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

// Equal tensors, byte for byte (fp8 values, fp32 scales: -0 and +0 differ, as they should).
bool sameBytes(const torch::Tensor& a, const torch::Tensor& b) {
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
    const auto ca = a.contiguous(), cb = b.contiguous();
    return std::memcmp(ca.data_ptr(), cb.data_ptr(), size_t(ca.numel()) * ca.element_size()) == 0;
}

// Data that reaches every branch of the scale rules: rows of magnitudes 2^-40 ... 2^40 (some
// groups' amax / 448 below fp32's smallest normal), an all-zero row, a row of subnormals, a
// group whose largest value is exactly 448 x 2^k (ratio a power of two), values past 448 x scale
// after amax rounding, and fp32's largest finite value.
torch::Tensor edgeMatrix(int64_t rows, int64_t cols, uint64_t seed) {
    torch::manual_seed(seed);
    auto exponents = torch::randint(-40, 41, {rows, 1}, torch::kFloat32);
    auto m = torch::randn({rows, cols}) * torch::exp2(exponents);
    if (rows > 3) {
        m[1].zero_();
        m[2] = torch::randn({cols}) * 1e-42f;  // subnormal fp32
        m[3][0] = 448.0f * 0x1p-5f;
    }
    if (rows > 5 && cols > 2) {
        m[4][cols - 1] = std::numeric_limits<float>::max();
        m[5][1] = std::nextafter(448.0f, 1e9f) * 0x1p20f;
    }
    return m;
}

using Case = std::tuple<Fp8Grouping, Fp8ScaleRule, const char*>;
const std::vector<Case>& allRules() {
    static const std::vector<Case> cases = {
        {Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, "1x128 amax"},
        {Fp8Grouping::kRowTiles, Fp8ScaleRule::kPowerOfTwo, "1x128 pow2"},
        {Fp8Grouping::kColumnTiles, Fp8ScaleRule::kAmax, "128x1 amax"},
        {Fp8Grouping::kColumnTiles, Fp8ScaleRule::kPowerOfTwo, "128x1 pow2"},
        {Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, "128x128 amax"},
        {Fp8Grouping::kBlocks, Fp8ScaleRule::kPowerOfTwo, "128x128 pow2"},
    };
    return cases;
}

// ---------------------------------------------------------------------------------------------
// at::_scaled_mm_v2's operands, read here from the layouts' definitions (cuBLASLt's 1-D and
// 128 x 128 block scaling, as ATen's ScaledBlas.cpp and its tests lay them out):
//   a [M, K] row-major, b [K, N] column-major, all fp8 E4M3; fp32 scales
//   1 x 128 a:   a[m, k] scaled by a_scales[m, k / 128], a_scales [M, K/128] strides (1, M)
//   1 x 128 b:   b[k, n] scaled by b_scales[n, k / 128], b_scales [N, K/128] strides (1, N)
//   128x128 b:   b[k, n] scaled by b_scales[k / 128, n / 128], b_scales [L4, N/128] strides
//                (1, L4), L4 = K/128 rounded up to a multiple of 4

void checkLayout(const Fp8ScaledMm& p) {
    const int64_t m = p.a.size(0), k = p.a.size(1), n = p.b.size(1);
    QCOMPARE(p.b.size(0), k);
    QCOMPARE(p.a.scalar_type(), at::kFloat8_e4m3fn);
    QCOMPARE(p.b.scalar_type(), at::kFloat8_e4m3fn);
    QVERIFY(m % 128 == 0 && k % 128 == 0 && n % 128 == 0);  // our padding (K and N need 16)
    QVERIFY(p.rows <= m && p.cols <= n && m - p.rows < 128 && n - p.cols < 128);
    QVERIFY(p.a.stride(1) == 1 && p.a.stride(0) == k);  // row-major
    QVERIFY(p.b.stride(0) == 1 && p.b.stride(1) == k);  // column-major
    QCOMPARE(p.a_recipe, ScalingType::BlockWise1x128);
    QCOMPARE(p.a_scales.scalar_type(), torch::kFloat32);
    QCOMPARE(p.b_scales.scalar_type(), torch::kFloat32);
    QCOMPARE(p.a_scales.sizes().vec(), (std::vector<int64_t>{m, k / 128}));
    QVERIFY(p.a_scales.stride(0) == 1 && (p.a_scales.stride(1) == m || k / 128 == 1));
    if (p.b_recipe == ScalingType::BlockWise1x128) {
        QCOMPARE(p.b_scales.sizes().vec(), (std::vector<int64_t>{n, k / 128}));
        QVERIFY(p.b_scales.stride(0) == 1 && (p.b_scales.stride(1) == n || k / 128 == 1));
    } else {
        QCOMPARE(p.b_recipe, ScalingType::BlockWise128x128);
        const int64_t l4 = (k / 128 + 3) / 4 * 4;
        QCOMPARE(p.b_scales.sizes().vec(), (std::vector<int64_t>{l4, n / 128}));
        QVERIFY(p.b_scales.stride(0) == 1 && (p.b_scales.stride(1) == l4 || n / 128 == 1));
    }
}

// The product the kernel computes from those operands, in fp64, cut to rows x cols.
torch::Tensor emulatedProduct(const Fp8ScaledMm& p) {
    const int64_t k = p.a.size(1);
    const auto a = p.a.to(torch::kFloat64) * p.a_scales.to(torch::kFloat64).repeat_interleave(128, 1);
    auto b = p.b.to(torch::kFloat64);
    if (p.b_recipe == ScalingType::BlockWise1x128)
        b = b * p.b_scales.to(torch::kFloat64).t().repeat_interleave(128, 0);
    else
        b = b * p.b_scales.narrow(0, 0, k / 128).to(torch::kFloat64).repeat_interleave(128, 0).repeat_interleave(128, 1);
    return at::mm(a, b).narrow(0, 0, p.rows).narrow(1, 0, p.cols);
}

}  // namespace

class TestFp8Cuda : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // fp8ScalesOf against fp8Scale on every amax that separates the rules' branches.
    void scalesEqualFp8ScaleBitwise() {
        std::vector<float> amax = {0.0f, std::numeric_limits<float>::denorm_min(), 1e-40f,
                                   std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                                   std::numeric_limits<float>::max() / 3};
        for (int e = -149; e <= 127; ++e) {
            const float p = std::ldexp(1.0f, e);
            for (float v : {p, p * 448.0f, p * 224.0f, p * 300.0f})
                if (std::isfinite(v))
                    for (float w : {v, std::nextafter(v, 0.0f), std::nextafter(v, 1e38f)})
                        if (std::isfinite(w)) amax.push_back(w);
        }
        torch::manual_seed(7);
        const auto random = torch::exp2(torch::rand({4096}) * 250 - 140) * (1 + torch::rand({4096}));
        for (int64_t i = 0; i < random.numel(); ++i)
            amax.push_back(random[i].item<float>());
        const auto t = torch::from_blob(amax.data(), {int64_t(amax.size())}, torch::kFloat32).clone();
        for (auto rule : {Fp8ScaleRule::kAmax, Fp8ScaleRule::kPowerOfTwo}) {
            const auto got = fp8ScalesOf(t, rule);
            const float* g = got.data_ptr<float>();
            for (size_t i = 0; i < amax.size(); ++i)
                if (bitsOf(g[i]) != bitsOf(fp8Scale(amax[i], rule)))
                    QFAIL(qPrintable(QString("amax %1 (rule %2): %3 against fp8Scale's %4")
                                         .arg(double(amax[i]), 0, 'g', 9)
                                         .arg(int(rule))
                                         .arg(double(g[i]), 0, 'g', 9)
                                         .arg(double(fp8Scale(amax[i], rule)), 0, 'g', 9)));
        }
    }

    // The tensor-op quantiser on the CPU against quantiseFp8: the same bytes.
    void quantiserEqualsCpuBitwise_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::newRow("130 x 200 (partial edges both ways)") << 130 << 200;
        QTest::newRow("1 x 5 (one partial group)") << 1 << 5;
        QTest::newRow("257 x 129") << 257 << 129;
        QTest::newRow("256 x 384 (whole groups)") << 256 << 384;
    }
    void quantiserEqualsCpuBitwise() {
        QFETCH(int, rows);
        QFETCH(int, cols);
        const auto m = edgeMatrix(rows, cols, uint64_t(rows * 1000 + cols));
        // A strided view too (a transposed copy's transpose), and bf16 input (widened by both).
        const auto strided = m.t().contiguous().t();
        const auto bf16 = m.clamp(-1e38, 1e38).to(torch::kBFloat16);  // fp32's largest is inf in bf16
        for (const auto& [grouping, rule, name] : allRules()) {
            for (const auto& [input, reference] :
                 {std::pair{m, m}, std::pair{strided, m}, std::pair{bf16, bf16.to(torch::kFloat32)}}) {
                const auto want = quantiseFp8(reference, grouping, rule, "m");
                const auto got = quantiseFp8Tensors(input, grouping, rule, "m");
                QVERIFY2(got.grouping == grouping, name);
                QVERIFY2(sameBytes(got.values, want.values), name);
                QVERIFY2(sameBytes(got.scales, want.scales), name);
            }
        }
    }

    void nonFiniteRefusedAsOnCpu_data() {
        QTest::addColumn<float>("bad");
        QTest::newRow("nan") << std::numeric_limits<float>::quiet_NaN();
        QTest::newRow("inf") << std::numeric_limits<float>::infinity();
        QTest::newRow("-inf") << -std::numeric_limits<float>::infinity();
    }
    void nonFiniteRefusedAsOnCpu() {
        QFETCH(float, bad);
        for (const auto& [grouping, rule, name] : allRules()) {
            auto m = torch::randn({130, 200});
            m.index_put_({129, 150}, bad);
            std::string want, got;
            try {
                quantiseFp8(m, grouping, rule, "the matrix");
            } catch (const Fp8NonFiniteError& e) {
                want = e.what();
            }
            try {
                quantiseFp8Tensors(m, grouping, rule, "the matrix");
            } catch (const Fp8NonFiniteError& e) {
                got = e.what();
            }
            QVERIFY2(!want.empty(), name);
            QCOMPARE(got, want);
        }
        // The operands of the products carry a check each, named as fp8Linear names them.
        auto x = torch::randn({4, 16});
        x.index_put_({2, 3}, bad);
        const auto p = fp8ForwardProduct(x, torch::randn({8, 16}), nullptr);
        QCOMPARE(int(p.checks.size()), 2);
        QVERIFY(!p.checks[0].finite.item<bool>() && p.checks[1].finite.item<bool>());
        QCOMPARE(std::string(p.checks[0].what), std::string("x, the input of an fp8 Linear"));
    }

    // 1 x 128 tile scales [R, K/128] R-major, by hand: R = 3, K/128 = 2.
    void tileScaleLayoutByHand() {
        const auto scales = torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({3, 2});
        const auto laid = scaledMmTileScales(scales);
        QCOMPARE(laid.sizes().vec(), (std::vector<int64_t>{3, 2}));
        QCOMPARE(laid.strides().vec(), (std::vector<int64_t>{1, 3}));
        QVERIFY(torch::equal(laid, scales));
        // Memory: the first tile of every row, then the second.
        const float* p = laid.data_ptr<float>();
        const std::vector<float> memory(p, p + 6);
        QCOMPARE(memory, (std::vector<float>{1, 3, 5, 2, 4, 6}));
    }

    // 128 x 128 block scales of mat_b's transpose [N/128, K/128] to [L4, N/128], strides (1, L4).
    void blockScaleLayoutByHand() {
        // N/128 = 2, K/128 = 3: L4 = 4, one zero row of padding per block column.
        const auto scales = torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3});
        const auto laid = scaledMmBlockScales(scales);
        QCOMPARE(laid.sizes().vec(), (std::vector<int64_t>{4, 2}));
        QCOMPARE(laid.strides().vec(), (std::vector<int64_t>{1, 4}));
        const float* p = laid.data_ptr<float>();
        QCOMPARE(std::vector<float>(p, p + 8), (std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0}));
        QCOMPARE(laid[2][1].item<float>(), 6.f);  // block (n 1, k 2) at [k, n]
        // K/128 = 4: no padding; K/128 = 5: L4 = 8; one block column (N/128 = 1).
        QCOMPARE(scaledMmBlockScales(torch::ones({3, 4})).sizes().vec(), (std::vector<int64_t>{4, 3}));
        const auto five = scaledMmBlockScales(torch::arange(1, 6, torch::kFloat32).view({1, 5}));
        QCOMPARE(five.sizes().vec(), (std::vector<int64_t>{8, 1}));
        const float* q = five.data_ptr<float>();
        QCOMPARE(std::vector<float>(q, q + 8), (std::vector<float>{1, 2, 3, 4, 5, 0, 0, 0}));
    }

    // Each product's operands in the kernel's layouts, multiplied here in fp64, against
    // fp8Linear's y, dx and dW (fp32 GEMMs of the same quantised operands: within 1e-6).
    void productsOperandsEqualCpuEmulation_data() {
        QTest::addColumn<QList<int>>("x_sizes");
        QTest::addColumn<int>("out");
        QTest::newRow("x [2, 65, 200], W [150, 200] (every side padded)") << QList<int>{2, 65, 200} << 150;
        QTest::newRow("x [256, 256], W [384, 256] (whole blocks)") << QList<int>{256, 256} << 384;
        QTest::newRow("x [3, 1, 40], W [24, 40] (one partial group)") << QList<int>{3, 1, 40} << 24;
    }
    void productsOperandsEqualCpuEmulation() {
        QFETCH(QList<int>, x_sizes);
        QFETCH(int, out);
        std::vector<int64_t> sizes(x_sizes.begin(), x_sizes.end());
        const int64_t in = sizes.back();
        torch::manual_seed(11);
        const auto x = torch::randn(sizes).requires_grad_(true);
        const auto w = (torch::randn({out, in}) * 0.05).requires_grad_(true);
        const auto y = fp8Linear(x, w);
        const auto dy = torch::randn(y.sizes());
        y.backward(dy);

        const auto rows = x.detach().reshape({-1, in});
        const auto g = dy.reshape({-1, int64_t(out)});
        Fp8Matrix kept;
        const auto forward = fp8ForwardProduct(rows, w.detach(), &kept);
        const auto dgrad = fp8DgradProduct(g, w.detach());
        const auto wgrad = fp8WgradProduct(g, kept, in);
        for (const auto* p : {&forward, &dgrad, &wgrad}) {
            checkLayout(*p);
            if (QTest::currentTestFailed()) return;
            for (const auto& check : p->checks)
                QVERIFY(check.finite.item<bool>());
        }
        QCOMPARE(forward.b_recipe, ScalingType::BlockWise128x128);
        QCOMPARE(dgrad.b_recipe, ScalingType::BlockWise128x128);
        QCOMPARE(wgrad.b_recipe, ScalingType::BlockWise1x128);
        const double y_error = relativeFrobenius(emulatedProduct(forward), y.detach().reshape({-1, int64_t(out)}));
        const double dx_error = relativeFrobenius(emulatedProduct(dgrad), x.grad().reshape({-1, in}));
        const double dw_error = relativeFrobenius(emulatedProduct(wgrad), w.grad());
        qInfo("relative Frobenius against fp8Linear: y %.2e, dx %.2e, dW %.2e", y_error, dx_error, dw_error);
        QVERIFY2(y_error < 1e-6, qPrintable(QString::number(y_error)));
        QVERIFY2(dx_error < 1e-6, qPrintable(QString::number(dx_error)));
        QVERIFY2(dw_error < 1e-6, qPrintable(QString::number(dw_error)));
        // The kept x: fp8 tiles and their scales; for whole tiles, fp8LinearSavedBytes exactly.
        QCOMPARE(kept.values.scalar_type(), at::kFloat8_e4m3fn);
        const int64_t tokens = rows.size(0);
        if (tokens % 128 == 0 && in % 128 == 0)
            QCOMPARE(kept.values.numel() + 4 * kept.scales.numel(), fp8LinearSavedBytes(tokens, in));
    }

    void unsupportedReasonWithoutCuda() {
        if (torch::cuda::is_available()) QSKIP("CUDA is available here: the no-CUDA reason cannot be produced");
        for (int index : {0, 3}) {
            const auto why = QString::fromStdString(fp8CudaUnsupportedReason(index));
            QVERIFY2(why.contains("runtime.dtype fp8"), qPrintable(why));
            QVERIFY2(why.contains(QString("cuda:%1").arg(index)), qPrintable(why));
            QVERIFY2(why.contains("compute capability 9"), qPrintable(why));
            QVERIFY2(why.contains("runtime.dtype bf16"), qPrintable(why));
        }
    }

    // On an SM90 GPU: the tensor cores against the emulation, the bounds of
    // fp8_cuda_comparison.h (which bench/fp8_cuda_check.cpp runs on the GPU machine).
    void gpuEqualsCpuEmulation_data() {
        QTest::addColumn<int>("index");
        const auto cases = fp8CudaCases();
        for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].name.c_str()) << int(i);
    }
    void gpuEqualsCpuEmulation() {
        if (!torch::cuda::is_available()) QSKIP("no CUDA device: the fp8 products need an SM90 GPU");
        if (const auto why = fp8CudaUnsupportedReason(0); !why.empty()) QSKIP(why.c_str());
        QFETCH(int, index);
        const Fp8CudaCase c = fp8CudaCases()[size_t(index)];
        const Fp8CudaComparison r = compareFp8CudaWithEmulation(c);
        qInfo("relative Frobenius, GPU against the CPU emulation: y %.2e, dx %.2e, dW %.2e", r.y, r.dx, r.dw);
        QVERIFY(r.dtypes_right);
        QVERIFY2(r.y < r.bound, qPrintable(QString::number(r.y)));
        QVERIFY2(r.dx < r.bound, qPrintable(QString::number(r.dx)));
        QVERIFY2(r.dw < r.dw_bound, qPrintable(QString::number(r.dw)));

        const auto dtype = c.bf16 ? torch::kBFloat16 : torch::kFloat32;
        const auto x_gpu = torch::randn(c.x_sizes).to(torch::kCUDA, dtype).requires_grad_(true);
        const auto w_gpu = (torch::randn({c.out, c.x_sizes.back()}) * 0.05).to(torch::kCUDA).requires_grad_(true);
        auto dy_sizes = c.x_sizes;
        dy_sizes.back() = c.out;
        const auto dy = torch::randn(dy_sizes);
        // A NaN in dy refused before any product, named as on the CPU.
        auto bad = dy.to(torch::kCUDA, dtype);
        bad.index_put_({0, 1, 2}, std::numeric_limits<float>::quiet_NaN());
        const auto y_again = fp8LinearCuda(x_gpu, w_gpu);
        try {
            y_again.backward(bad);
            QFAIL("no error");
        } catch (const Fp8NonFiniteError& e) {
            QVERIFY2(QString(e.what()).startsWith("non-finite value nan in dy, the output gradient of an fp8 Linear"),
                     e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestFp8Cuda)
#include "test_fp8_cuda.moc"
