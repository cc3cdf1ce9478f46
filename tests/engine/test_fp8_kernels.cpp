// The fp8 recipe's CPU kernels (kernels/fp8_blocks.h, kernels/fp8_linear.h) against references
// written here: E4M3 rounding in fp64 (round to nearest even on 3 mantissa bits, subnormals below
// 2^-6 in steps of 2^-9, 448 the largest value), bit patterns decoded by hand, scales by their
// definition, products of the dequantised operands in fp64, and byte counts by hand.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_paths_report.h"
#include "kernels/fp8_blocks.h"
#include "kernels/fp8_linear.h"
#include "kernels/linear.h"
#include "kernels/product_precision.h"
#include "memory/memory_account.h"

using namespace trainbench;
using namespace trainbench::kernels;

namespace {

constexpr double kSmallestNormalFp32 = 0x1p-126;

// ---------------------------------------------------------------------------------------------
// E4M3 by hand

// |v| <= 448 to the nearest E4M3 value, ties to even: 3 mantissa bits, so in [2^e, 2^(e+1)) the
// step is 2^(e-3); below 2^-6 (the smallest normal) the step stays 2^-9 (subnormals).
double e4m3Round(double v) {
    if (v == 0) return 0;
    const double a = std::abs(v);
    const int e = std::max(std::ilogb(a), -6);
    const double step = std::ldexp(1.0, e - 3);
    const double units = a / step;  // exact: a power-of-two division
    double n = std::floor(units);
    const double rest = units - n;
    if (rest > 0.5 || (rest == 0.5 && std::fmod(n, 2.0) != 0)) n += 1;
    return std::copysign(std::min(n * step, 448.0), v);
}

// An E4M3 (fn) bit pattern: sign, 4 exponent bits (bias 7), 3 mantissa bits; S.1111.111 is NaN.
double e4m3Decode(uint8_t bits) {
    const double sign = (bits & 0x80) ? -1.0 : 1.0;
    const int exponent = (bits >> 3) & 0xF, mantissa = bits & 0x7;
    if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<double>::quiet_NaN();
    if (exponent == 0) return sign * mantissa * 0x1p-9;
    return sign * (1.0 + mantissa / 8.0) * std::ldexp(1.0, exponent - 7);
}

double decoded(c10::Float8_e4m3fn v) { return e4m3Decode(v.x); }

std::vector<double> decodedValues(const torch::Tensor& fp8) {
    auto bytes = fp8.contiguous().view(torch::kUInt8);
    const uint8_t* p = bytes.data_ptr<uint8_t>();
    std::vector<double> out(size_t(bytes.numel()));
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = e4m3Decode(p[i]);
    return out;
}

// ---------------------------------------------------------------------------------------------
// The quantiser by its definition, in fp64

// amax / 448 as an fp32 number (the stored scale), or the smallest power of two s with
// amax <= 448 s; never below fp32's smallest normal.
double referenceScale(double amax, bool power_of_two) {
    if (!power_of_two) return std::max(double(float(amax / 448.0)), kSmallestNormalFp32);
    double s = kSmallestNormalFp32;
    while (amax > 448.0 * s)
        s *= 2;
    return s;
}

struct Reference {
    int64_t rows = 0, cols = 0, group_rows = 1, group_cols = 1;
    std::vector<double> q;       // [rows, cols] E4M3 values
    std::vector<double> scales;  // [ceil(rows / group_rows), ceil(cols / group_cols)]
    int64_t scaleCols() const { return (cols + group_cols - 1) / group_cols; }
    double scaleOf(int64_t r, int64_t c) const {
        return scales[size_t((r / group_rows) * scaleCols() + c / group_cols)];
    }
    // q * scale, exact in fp64 (4 significant bits times 24)
    torch::Tensor dequantised() const {
        auto out = torch::empty({rows, cols}, torch::kFloat64);
        double* p = out.data_ptr<double>();
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c)
                p[r * cols + c] = q[size_t(r * cols + c)] * scaleOf(r, c);
        return out;
    }
};

// The quotient v / scale as fp32 division gives it: a quotient of two fp32 numbers computed in fp64
// and rounded to fp32 is the correctly rounded fp32 quotient (53 >= 2 * 24 + 2 bits).
Reference referenceQuantise(const torch::Tensor& matrix, int64_t group_rows, int64_t group_cols, bool power_of_two) {
    auto m = matrix.to(torch::kFloat64).contiguous();
    const double* p = m.data_ptr<double>();
    Reference ref;
    ref.rows = m.size(0);
    ref.cols = m.size(1);
    ref.group_rows = group_rows;
    ref.group_cols = group_cols;
    const int64_t row_groups = (ref.rows + group_rows - 1) / group_rows, col_groups = ref.scaleCols();
    std::vector<double> amax(size_t(row_groups * col_groups), 0.0);
    for (int64_t r = 0; r < ref.rows; ++r)
        for (int64_t c = 0; c < ref.cols; ++c) {
            double& a = amax[size_t((r / group_rows) * col_groups + c / group_cols)];
            a = std::max(a, std::abs(p[r * ref.cols + c]));
        }
    for (double a : amax)
        ref.scales.push_back(referenceScale(a, power_of_two));
    ref.q.resize(size_t(ref.rows * ref.cols));
    for (int64_t r = 0; r < ref.rows; ++r)
        for (int64_t c = 0; c < ref.cols; ++c) {
            const double quotient = double(float(p[r * ref.cols + c] / ref.scaleOf(r, c)));
            ref.q[size_t(r * ref.cols + c)] = e4m3Round(std::clamp(quotient, -448.0, 448.0));
        }
    return ref;
}

int64_t extentRows(Fp8Grouping g) { return g == Fp8Grouping::kRowTiles ? 1 : 128; }
int64_t extentCols(Fp8Grouping g) { return g == Fp8Grouping::kColumnTiles ? 1 : 128; }

Reference referenceQuantise(const torch::Tensor& matrix, Fp8Grouping g, Fp8ScaleRule rule) {
    return referenceQuantise(matrix, extentRows(g), extentCols(g), rule == Fp8ScaleRule::kPowerOfTwo);
}

// ---------------------------------------------------------------------------------------------
// Errors

double relativeFrobenius(const torch::Tensor& got, const torch::Tensor& want) {
    const auto w = want.to(torch::kFloat64);
    return (got.to(torch::kFloat64) - w).norm().item<double>() / std::max(w.norm().item<double>(), 1e-300);
}

// Rows of very different magnitudes (2^-12 ... 2^12), as activations have, seeded.
torch::Tensor spreadMatrix(int64_t rows, int64_t cols, uint64_t seed) {
    torch::manual_seed(seed);
    auto magnitude = torch::exp2(torch::randint(-12, 13, {rows, 1}, torch::kFloat32));
    return torch::randn({rows, cols}) * magnitude;
}

// A bf16-scale check that fp8 tensors really hold one byte.
bool oneBytePerElement(const torch::Tensor& t) {
    return t.scalar_type() == at::kFloat8_e4m3fn && t.element_size() == 1;
}

}  // namespace

class TestFp8Kernels : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { installTrackingCpuAllocator(); }

    // The test's own rounding and decoding agree with values worked out by hand, then every
    // E4M3 value survives the kernel's cast unchanged and every midpoint rounds to even.
    void e4m3RoundingByHand() {
        QCOMPARE(e4m3Round(1.0625), 1.0);           // 1 + 1/16: midway between 1 and 1.125, even is 1
        QCOMPARE(e4m3Round(1.1875), 1.25);          // midway between 1.125 and 1.25, even is 1.25
        QCOMPARE(e4m3Round(0x1p-10), 0.0);          // half the smallest subnormal: to 0 (even)
        QCOMPARE(e4m3Round(3 * 0x1p-10), 0x1p-8);   // 1.5 steps of 2^-9: to 2 steps
        QCOMPARE(e4m3Round(15 * 0x1p-10), 0x1p-6);  // 7.5 steps: to 8 steps, the smallest normal
        QCOMPARE(e4m3Round(420.0), 416.0);          // steps of 32 in [256, 512): 416 < 420 < 432
        QCOMPARE(e4m3Decode(0x7E), 448.0);          // 0.1111.110
        QCOMPARE(e4m3Decode(0x01), 0x1p-9);
        QCOMPARE(e4m3Decode(0x08), 0x1p-6);
        QCOMPARE(e4m3Decode(0xB8), -1.0);  // 1.0111.000
        QVERIFY(std::isnan(e4m3Decode(0x7F)));
        for (int bits = 0; bits < 256; ++bits) {
            const double v = e4m3Decode(uint8_t(bits));
            if (std::isnan(v)) continue;
            QCOMPARE(e4m3Round(v), v);
            QCOMPARE(decoded(saturatingE4m3(float(v))), v);
            // Midway to the next value up: rounds to the one with an even mantissa.
            if (bits != 0x7E && bits != 0xFE && bits != 0x80) {
                const double next = e4m3Decode(uint8_t(bits + 1));
                if (std::isnan(next)) continue;
                const double mid = (v + next) / 2;
                const double even = (bits & 1) ? next : v;
                QCOMPARE(decoded(saturatingE4m3(float(mid))), even);
                QCOMPARE(e4m3Round(mid), even);
            }
        }
    }

    // 470 is NaN through ATen's cast; the kernel clamps first. Values past 448 give 448.
    void saturation() {
        for (float v : {448.0f, 449.0f, 460.0f, 464.0f, 470.0f, 480.0f, 1e6f, 3e38f}) {
            QCOMPARE(decoded(saturatingE4m3(v)), 448.0);
            QCOMPARE(decoded(saturatingE4m3(-v)), -448.0);
        }
        // A group's largest value lands on 448 itself (amax / (amax / 448)), never past it.
        auto m = torch::tensor({{1.0f, -3.0f, 1000.0f, 2.5f}});
        const auto q = decodedValues(quantiseFp8(m, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, "m").values);
        QCOMPARE(q[2], 448.0);
    }

    // Random sweeps through the cast, against e4m3Round of the same fp32 value.
    void castAgainstReference() {
        torch::manual_seed(3);
        auto v = torch::cat(
            {torch::randn({20000}) * 100, torch::exp2(torch::rand({20000}) * 20 - 14) * torch::randn({20000}).sign()});
        const float* p = v.data_ptr<float>();
        for (int64_t i = 0; i < v.numel(); ++i) {
            const double want = e4m3Round(std::clamp(double(p[i]), -448.0, 448.0));
            if (decoded(saturatingE4m3(p[i])) != want)
                QFAIL(qPrintable(QString("cast of %1").arg(double(p[i]), 0, 'g', 17)));
        }
    }

    // Every grouping and scale rule, on shapes with partial edge groups, against the reference:
    // the scales exactly, every E4M3 value exactly.
    void quantiserAgainstReference_data() {
        QTest::addColumn<int>("grouping");
        QTest::addColumn<int>("rule");
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        const std::pair<const char*, Fp8Grouping> groupings[] = {
            {"1x128", Fp8Grouping::kRowTiles}, {"128x1", Fp8Grouping::kColumnTiles}, {"128x128", Fp8Grouping::kBlocks}};
        const std::pair<const char*, Fp8ScaleRule> rules[] = {{"amax", Fp8ScaleRule::kAmax},
                                                              {"pow2", Fp8ScaleRule::kPowerOfTwo}};
        const std::pair<int, int> shapes[] = {{130, 200}, {1, 1}, {128, 128}, {257, 129}, {3, 520}};
        for (const auto& [gname, g] : groupings)
            for (const auto& [rname, r] : rules)
                for (const auto& [rows, cols] : shapes)
                    QTest::newRow(qPrintable(QString("%1 %2 %3x%4").arg(gname, rname).arg(rows).arg(cols)))
                        << int(g) << int(r) << rows << cols;
    }
    void quantiserAgainstReference() {
        QFETCH(int, grouping);
        QFETCH(int, rule);
        QFETCH(int, rows);
        QFETCH(int, cols);
        const auto g = Fp8Grouping(grouping);
        const auto sr = Fp8ScaleRule(rule);
        const auto m = spreadMatrix(rows, cols, uint64_t(rows * 1000 + cols));
        const auto q = quantiseFp8(m, g, sr, "m");
        const auto ref = referenceQuantise(m, g, sr);
        QVERIFY(oneBytePerElement(q.values));
        QCOMPARE(q.values.sizes().vec(), (std::vector<int64_t>{rows, cols}));
        QCOMPARE(q.scales.scalar_type(), torch::kFloat32);
        const int64_t scale_rows = (rows + extentRows(g) - 1) / extentRows(g);
        const int64_t scale_cols = (cols + extentCols(g) - 1) / extentCols(g);
        QCOMPARE(q.scales.sizes().vec(), (std::vector<int64_t>{scale_rows, scale_cols}));
        const float* s = q.scales.data_ptr<float>();
        for (size_t i = 0; i < ref.scales.size(); ++i)
            if (double(s[i]) != ref.scales[i])
                QFAIL(qPrintable(QString("scale %1: %2 against %3").arg(i).arg(s[i]).arg(ref.scales[i])));
        const auto values = decodedValues(q.values);
        for (size_t i = 0; i < values.size(); ++i)
            if (values[i] != ref.q[i])
                QFAIL(qPrintable(QString("value %1: %2 against %3").arg(i).arg(values[i]).arg(ref.q[i])));
        // Each group's largest |value| lands on 448 (amax scales) or in [224, 448] (powers of two).
        std::vector<double> largest(ref.scales.size(), 0.0);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
                double& l = largest[size_t((r / extentRows(g)) * scale_cols + c / extentCols(g))];
                l = std::max(l, std::abs(values[size_t(r * cols + c)]));
            }
        for (double l : largest) {
            if (sr == Fp8ScaleRule::kAmax)
                QCOMPARE(l, 448.0);
            else
                QVERIFY2(l >= 224.0 && l <= 448.0, qPrintable(QString::number(l)));
        }
        // Dequantised: q * scale rounded once to fp32.
        const auto d = dequantiseFp8(q);
        QCOMPARE(d.scalar_type(), torch::kFloat32);
        QVERIFY(torch::equal(d, ref.dequantised().to(torch::kFloat32)));
    }

    // Scale shapes and byte counts of a 130 x 200 matrix, by hand.
    void layoutAndBytes() {
        const auto m = torch::randn({130, 200});
        QCOMPARE(quantiseFp8(m, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, "m").scales.sizes().vec(),
                 (std::vector<int64_t>{130, 2}));
        QCOMPARE(quantiseFp8(m, Fp8Grouping::kColumnTiles, Fp8ScaleRule::kAmax, "m").scales.sizes().vec(),
                 (std::vector<int64_t>{2, 200}));
        QCOMPARE(quantiseFp8(m, Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, "m").scales.sizes().vec(),
                 (std::vector<int64_t>{2, 2}));
        QCOMPARE(fp8Bytes(130, 200, Fp8Grouping::kRowTiles), int64_t(26000 + 4 * 260));
        QCOMPARE(fp8Bytes(130, 200, Fp8Grouping::kColumnTiles), int64_t(26000 + 4 * 400));
        QCOMPARE(fp8Bytes(130, 200, Fp8Grouping::kBlocks), int64_t(26000 + 4 * 4));
        // A strided view (a transpose) quantises as its contiguous copy does.
        const auto t = m.t();
        const auto a = quantiseFp8(t, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, "t");
        const auto b = quantiseFp8(t.contiguous(), Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, "t");
        QVERIFY(torch::equal(a.scales, b.scales));
        QVERIFY(torch::equal(a.values.view(torch::kUInt8), b.values.view(torch::kUInt8)));
    }

    // All-zero groups get fp32's smallest normal as scale and stay zeros (no 0/0); a single
    // value lands on 448; a group too small for amax / 448 to be a normal fp32 keeps that floor.
    void zeroSingleAndTinyGroups() {
        auto m = torch::zeros({3, 256});
        m.index_put_({1, 130}, 5.0f);                   // row 1, second tile: one value
        m.index_put_({2, 0}, 1e-40f);                   // row 2, first tile: an fp32 subnormal only
        m.index_put_({2, 200}, float(448 * 0x1p-131));  // row 2, second tile: amax / 448 = 2^-131
        for (auto rule : {Fp8ScaleRule::kAmax, Fp8ScaleRule::kPowerOfTwo}) {
            const auto q = quantiseFp8(m, Fp8Grouping::kRowTiles, rule, "m");
            const float* s = q.scales.data_ptr<float>();
            QCOMPARE(double(s[0]), kSmallestNormalFp32);  // row 0: all zeros
            QCOMPARE(double(s[1]), kSmallestNormalFp32);
            QCOMPARE(double(s[2]), kSmallestNormalFp32);  // row 1, first tile: zeros
            QCOMPARE(double(s[4]), kSmallestNormalFp32);  // row 2: below the floor
            QCOMPARE(double(s[5]), kSmallestNormalFp32);
            const auto values = decodedValues(q.values);
            const auto d = dequantiseFp8(q);
            QVERIFY(torch::isfinite(d).all().item<bool>());
            QCOMPARE(d.index({0}).abs().sum().item<double>(), 0.0);
            // 5 in a tile of zeros: amax scale 5/448 puts it on 448; the power of two is 2^-6
            // (2^-7 * 448 = 3.5 < 5 <= 7 = 2^-6 * 448), 5 * 2^6 = 320 = 1.25 * 2^8, exact.
            if (rule == Fp8ScaleRule::kAmax) {
                QCOMPARE(double(s[3]), double(5.0f / 448.0f));
                QCOMPARE(values[size_t(256 + 130)], 448.0);
                QVERIFY(std::abs(d.index({1, 130}).item<double>() - 5.0) <= 5.0 * 0x1p-23);
            } else {
                QCOMPARE(double(s[3]), 0x1p-6);
                QCOMPARE(values[size_t(256 + 130)], 320.0);
                QCOMPARE(d.index({1, 130}).item<double>(), 5.0);
            }
            // 1e-40 / 2^-126 = 0.00850...: 4.35 steps of 2^-9, so 4 steps (a subnormal E4M3).
            QCOMPARE(values[size_t(512)], 4 * 0x1p-9);
            // 448 * 2^-131 / 2^-126 = 14: an exact E4M3 value.
            QCOMPARE(values[size_t(512 + 200)], 14.0);
        }
    }

    // With scale 1 (amax 448) the values themselves are rounded: the subnormal range by hand.
    void subnormals() {
        const std::vector<std::pair<float, double>> cases = {
            {0x1p-7f, 0x1p-7},                                  // 4 steps of 2^-9, exact
            {0x1p-9f, 0x1p-9},                                  // the smallest subnormal
            {0x1p-10f, 0.0},                                    // half a step: ties to 0
            {0x1p-11f, 0.0},           {3 * 0x1p-10f, 0x1p-8},  // 1.5 steps: ties to 2
            {5 * 0x1p-10f, 0x1p-8},                             // 2.5 steps: ties to 2
            {7 * 0x1p-9f, 7 * 0x1p-9},                          // the largest subnormal
            {15 * 0x1p-10f, 0x1p-6},                            // 7.5 steps: to 8, the smallest normal
            {-3 * 0x1p-10f, -0x1p-8},
        };
        auto m = torch::zeros({1, 128});
        m.index_put_({0, 0}, 448.0f);
        for (size_t i = 0; i < cases.size(); ++i)
            m.index_put_({0, int64_t(i + 1)}, cases[i].first);
        const auto q = quantiseFp8(m, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, "m");
        QCOMPARE(q.scales.item<float>(), 1.0f);
        const auto values = decodedValues(q.values);
        const auto ref = referenceQuantise(m, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax);
        for (size_t i = 0; i < cases.size(); ++i) {
            QCOMPARE(values[i + 1], cases[i].second);
            QCOMPARE(ref.q[i + 1], cases[i].second);
        }
    }

    // A NaN or an infinity is the run's error, named, not a quiet zero.
    void nonFiniteRefused_data() {
        QTest::addColumn<float>("bad");
        QTest::addColumn<QString>("word");
        QTest::newRow("nan") << std::numeric_limits<float>::quiet_NaN() << "nan";
        QTest::newRow("inf") << std::numeric_limits<float>::infinity() << "inf";
        QTest::newRow("-inf") << -std::numeric_limits<float>::infinity() << "-inf";
    }
    void nonFiniteRefused() {
        QFETCH(float, bad);
        QFETCH(QString, word);
        for (auto g : {Fp8Grouping::kRowTiles, Fp8Grouping::kColumnTiles, Fp8Grouping::kBlocks}) {
            auto m = torch::randn({130, 200});
            m.index_put_({129, 150}, bad);
            try {
                quantiseFp8(m, g, Fp8ScaleRule::kAmax, "the matrix");
                QFAIL("no error");
            } catch (const Fp8NonFiniteError& e) {
                const QString what = e.what();
                QVERIFY2(what.startsWith("non-finite value " + word +
                                         " in the matrix (row 129, column 150) before fp8 quantisation"),
                         e.what());
            }
        }
        // Found by a worker thread of the quantiser's parallel loop too (rows far from the first).
        auto large = torch::randn({4096, 256});
        large.index_put_({4000, 7}, bad);
        QVERIFY_THROWS_EXCEPTION(Fp8NonFiniteError,
                                 quantiseFp8(large, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, "the matrix"));
        // Through the Linear: x and W in the forward, dy in the backward, each named.
        const auto w = torch::randn({8, 16}).requires_grad_(true);
        auto x = torch::randn({4, 16});
        x.index_put_({2, 3}, bad);
        QVERIFY_THROWS_EXCEPTION(Fp8NonFiniteError, fp8Linear(x, w));
        auto w_bad = torch::randn({8, 16});
        w_bad.index_put_({1, 1}, bad);
        QVERIFY_THROWS_EXCEPTION(Fp8NonFiniteError, fp8Linear(torch::randn({4, 16}), w_bad));
        const auto y = fp8Linear(torch::randn({4, 16}), w);
        auto upstream = torch::ones({4, 8});
        upstream.index_put_({0, 5}, bad);
        try {
            y.backward(upstream);
            QFAIL("no error");
        } catch (const std::exception& e) {
            QVERIFY2(std::string(e.what()).find("non-finite value " + word.toStdString() +
                                                " in dy, the output gradient") != std::string::npos,
                     e.what());
        }
    }

    // The same data in 1 x 128 tiles and in 128 x 128 blocks: a block's scale is the largest of
    // its tiles' (amax of amaxes, rounded the same way), 128 x 1 tiles are the 1 x 128 tiles of
    // the transpose, and on rows of different magnitudes the tiles lose far less than the blocks.
    void tilesAgainstBlocks() {
        const auto m = spreadMatrix(256, 256, 11);
        const auto tiles = quantiseFp8(m, Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, "m");
        const auto blocks = quantiseFp8(m, Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, "m");
        const auto largest_tile = tiles.scales.view({2, 128, 2}).amax(1);
        QVERIFY(torch::equal(blocks.scales, largest_tile));
        const auto columns = quantiseFp8(m.t().contiguous(), Fp8Grouping::kColumnTiles, Fp8ScaleRule::kAmax, "m");
        QVERIFY(torch::equal(columns.scales, tiles.scales.t()));
        QVERIFY(torch::equal(columns.values.view(torch::kUInt8), tiles.values.view(torch::kUInt8).t()));
        const double tile_error = relativeFrobenius(dequantiseFp8(tiles), m);
        const double block_error = relativeFrobenius(dequantiseFp8(blocks), m);
        // Per tile the error is E4M3's own: at most 2^-4 of each normal value (the subnormals lie
        // 2^15 below the tile's largest and weigh nothing). In a block the small rows fall into the
        // subnormals or to zero. Measured: tiles 0.0260, blocks 0.0263 in the Frobenius norm (the
        // large rows dominate it); the worst row 0.0291 in tiles, 1.0 in blocks (flushed to zero).
        QVERIFY2(tile_error < 0.0625, qPrintable(QString::number(tile_error)));
        const auto per_row = [&](const Fp8Matrix& q) {
            return ((dequantiseFp8(q) - m).norm(2, {1}) / m.norm(2, {1})).to(torch::kFloat64);
        };
        const double tile_worst = per_row(tiles).max().item<double>();
        const double block_worst = per_row(blocks).max().item<double>();
        qInfo("worst row: tiles %.4f, blocks %.4f", tile_worst, block_worst);
        QVERIFY2(tile_worst < 0.0625, qPrintable(QString::number(tile_worst)));
        QVERIFY2(block_worst > 0.5, qPrintable(QString::number(block_worst)));
    }

    // Re-cutting 1 x 128 tiles into 128 x 1 ones (x for Wgrad): with power-of-two scales at both
    // ends the second cut only shifts exponents, so it rounds nothing but values pushed into the
    // subnormals; with amax scales it rounds every element a second time.
    void relayoutWithPowersOfTwo() {
        torch::manual_seed(17);
        const auto x = torch::randn({256, 256});
        const auto recut_error = [&](Fp8ScaleRule rule) {
            const auto once = dequantiseFp8(quantiseFp8(x, Fp8Grouping::kRowTiles, rule, "x"));
            const auto twice =
                dequantiseFp8(quantiseFp8(once, Fp8Grouping::kColumnTiles, Fp8ScaleRule::kPowerOfTwo, "x"));
            return relativeFrobenius(twice, once);
        };
        const double pow2 = recut_error(Fp8ScaleRule::kPowerOfTwo);
        const double amax = recut_error(Fp8ScaleRule::kAmax);
        qInfo("second cut against the first: power-of-two tiles %.3g, amax tiles %.3g", pow2, amax);
        // Measured: 0 (power-of-two tiles: no value here lies 2^15 below its column's largest),
        // 0.0267 (amax tiles, E4M3's own error once more).
        QVERIFY2(pow2 < 1e-6, qPrintable(QString::number(pow2)));
        QVERIFY2(amax > 1e-2, qPrintable(QString::number(amax)));
    }

    // y = x W^T, dx = dy W and dW = dy^T x through autograd, on shapes with partial edge tiles
    // and blocks (in 200 = 128 + 72, out 130 = 128 + 2, 130 tokens = 128 + 2), against the fp64
    // products of the operands quantised and dequantised here, and against the unquantised ones.
    void productsAgainstReference() {
        torch::manual_seed(7);
        const auto x = torch::randn({2, 65, 200}).requires_grad_(true);
        const auto w = (torch::randn({130, 200}) * 0.05).requires_grad_(true);
        const auto upstream = torch::randn({2, 65, 130});
        const auto y = fp8Linear(x, w);
        y.backward(upstream);
        QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{2, 65, 130}));

        const auto x2 = x.detach().reshape({130, 200}), g2 = upstream.reshape({130, 130});
        const auto x_tiles = referenceQuantise(x2, 1, 128, true);
        const auto w_blocks = referenceQuantise(w.detach(), 128, 128, false).dequantised();
        const auto g_tiles = referenceQuantise(g2, 1, 128, false).dequantised();
        // x's tiles take power-of-two scales (they are re-cut for Wgrad). Wgrad: dy along the
        // tokens from fp32; x from its kept fp8 copy dequantised to fp32, then along the tokens;
        // both with power-of-two scales.
        const auto g_tokens = referenceQuantise(g2, 128, 1, true).dequantised();
        const auto x_tokens = referenceQuantise(x_tiles.dequantised().to(torch::kFloat32), 128, 1, true).dequantised();
        const auto y_ref = torch::matmul(x_tiles.dequantised(), w_blocks.t());
        const auto dx_ref = torch::matmul(g_tiles, w_blocks);
        const auto dw_ref = torch::matmul(g_tokens.t(), x_tokens);

        // The emulation's own rounding: operands dequantised to fp32 (2^-24 each) and fp32 sums
        // over 200 or 130 terms (about sqrt(terms) 2^-24 ~ 8e-7 on random data); measured 1.8e-7
        // (y), 2.1e-7 (dx), 1.0e-8 (dW: power-of-two scales leave the dequantised operands exact).
        const double e_y = relativeFrobenius(y.reshape({130, 130}), y_ref);
        const double e_dx = relativeFrobenius(x.grad().reshape({130, 200}), dx_ref);
        const double e_dw = relativeFrobenius(w.grad(), dw_ref);
        qInfo("against the dequantised fp64 products: y %.3g, dx %.3g, dW %.3g", e_y, e_dx, e_dw);
        QVERIFY2(e_y < 1e-6, qPrintable(QString::number(e_y)));
        QVERIFY2(e_dx < 1e-6, qPrintable(QString::number(e_dx)));
        QVERIFY2(e_dw < 1e-6, qPrintable(QString::number(e_dw)));
        QCOMPARE(x.grad().scalar_type(), torch::kFloat32);
        QCOMPARE(w.grad().scalar_type(), torch::kFloat32);
    }

    // Against the unquantised fp64 products on Gaussian data. An E4M3 element's relative error
    // is at most 2^-4 (half a step of 3 mantissa bits); on random data its root mean square is
    // about 2^-3 / sqrt(12) ~ 0.036 at the bottom of a binade and half that at the top, ~0.026
    // on average. A product's errors from its two operands are independent and add in
    // quadrature (~0.037). Wgrad's x is cut twice (its tiles, then the tokens'), but both with
    // power-of-two scales, so the second cut adds nothing beyond subnormals (with amax scales on
    // x's tiles it measured 0.0455). The bound 5e-2 holds them with margin; measured below.
    void productsAgainstUnquantised() {
        torch::manual_seed(13);
        const int64_t tokens = 512, in = 512, out = 384;
        const auto x = torch::randn({tokens, in}).requires_grad_(true);
        const auto w = (torch::randn({out, in}) / std::sqrt(double(in))).requires_grad_(true);
        const auto upstream = torch::randn({tokens, out});
        const auto y = fp8Linear(x, w);
        y.backward(upstream);
        const auto x64 = x.detach().to(torch::kFloat64), w64 = w.detach().to(torch::kFloat64);
        const auto g64 = upstream.to(torch::kFloat64);
        const double e_y = relativeFrobenius(y, torch::matmul(x64, w64.t()));
        const double e_dx = relativeFrobenius(x.grad(), torch::matmul(g64, w64));
        const double e_dw = relativeFrobenius(w.grad(), torch::matmul(g64.t(), x64));
        qInfo("against the unquantised fp64 products: y %.4f, dx %.4f, dW %.4f", e_y, e_dx, e_dw);
        // Measured: y 0.0373, dx 0.0369, dW 0.0376.
        QVERIFY2(e_y < 5e-2, qPrintable(QString::number(e_y)));
        QVERIFY2(e_dx < 5e-2, qPrintable(QString::number(e_dx)));
        QVERIFY2(e_dw < 5e-2, qPrintable(QString::number(e_dw)));
        // And the quantisation did happen: an fp32 product is ~1e-7 from fp64.
        QVERIFY(e_y > 1e-3 && e_dx > 1e-3 && e_dw > 1e-3);
    }

    // What one forward keeps for the backward: the fp8 x and one fp32 scale per 1 x 128 tile,
    // counted by the tracking allocator (bytes the graph holds beyond the output, x made inside
    // the account and dropped by the caller), against the hand count and kernels::linear.
    void savedBytes() {
        // x [2, 65, 200]: 130 tokens of 200 features, 2 tiles per token (128 + 72).
        const int64_t hand = 130 * 200 + 4 * 130 * 2;  // 27040
        QCOMPARE(fp8LinearSavedBytes(130, 200), hand);
        const auto held = [](auto project, torch::ScalarType dtype, const torch::Tensor& w) {
            MemoryAccount* account = newMemoryAccount();
            torch::Tensor y;
            {
                const ScopedMemoryAccount scope(account);
                auto x = torch::randn({2, 65, 200}).to(dtype);
                y = project(x, w);
            }
            return account->current.load() - int64_t(y.nbytes());
        };
        const auto w = torch::randn({64, 200}).requires_grad_(true);
        const int64_t fp8 =
            held([](const torch::Tensor& x, const torch::Tensor& w) { return fp8Linear(x, w); }, torch::kFloat32, w);
        QCOMPARE(fp8, hand);
        // runtime.dtype bf16 on the CPU: fp32 tensors with bf16 products, x kept in fp32.
        const int64_t cpu_bf16 = held(
            [](const torch::Tensor& x, const torch::Tensor& w) {
                const ProductPrecisionScope bf16(ProductPrecision::kBf16);
                return kernels::linear(x, w);
            },
            torch::kFloat32, w);
        QCOMPARE(cpu_bf16, int64_t(130 * 200 * 4));
        QVERIFY(2 * fp8 < cpu_bf16);
        // A bf16 x (what bf16 autocast keeps on a GPU): 2 bytes per element against fp8's 1 + 4/128
        // for whole tiles (51.6 %), just over half by the scales; here 200 features make two tiles,
        // (200 + 2 * 4) / (2 * 200) = 52 %.
        const auto w16 = w.detach().to(torch::kBFloat16).requires_grad_(true);
        const int64_t bf16 = held([](const torch::Tensor& x, const torch::Tensor& w) { return kernels::linear(x, w); },
                                  torch::kBFloat16, w16);
        QCOMPARE(bf16, int64_t(130 * 200 * 2));
        QCOMPARE(double(fp8) / double(bf16), (200.0 + 2 * 4.0) / (2 * 200.0));
        // Without a gradient for W nothing of x is kept (x an intermediate needing a gradient,
        // x + a leaf, whose own node keeps nothing).
        const auto frozen = torch::randn({64, 200});
        const auto leaf = torch::zeros({}).requires_grad_(true);
        const int64_t none =
            held([&](const torch::Tensor& x, const torch::Tensor& w) { return fp8Linear(x + leaf, w); },
                 torch::kFloat32, frozen);
        QCOMPARE(none, int64_t(0));
    }

    // loss.backward() through the node: fp32 gradients of the inputs' shapes, for x of any rank.
    void gradientShapes() {
        torch::manual_seed(1);
        const auto x = torch::randn({2, 3, 16}).requires_grad_(true);
        const auto w = torch::randn({5, 16}).requires_grad_(true);
        fp8Linear(x, w).square().sum().backward();
        QCOMPARE(x.grad().sizes().vec(), x.sizes().vec());
        QCOMPARE(w.grad().sizes().vec(), w.sizes().vec());
        QCOMPARE(x.grad().scalar_type(), torch::kFloat32);
        QCOMPARE(w.grad().scalar_type(), torch::kFloat32);
        QVERIFY(torch::isfinite(x.grad()).all().item<bool>() && x.grad().abs().sum().item<double>() > 0);
        QVERIFY(torch::isfinite(w.grad()).all().item<bool>() && w.grad().abs().sum().item<double>() > 0);
        const auto v = torch::randn({16}).requires_grad_(true);  // one token, no batch dimension
        fp8Linear(v, w).sum().backward();
        QCOMPARE(v.grad().sizes().vec(), v.sizes().vec());
        QVERIFY_THROWS_EXCEPTION(c10::Error, fp8Linear(x.detach().to(torch::kFloat64), w));
    }
};

QTEST_APPLESS_MAIN(TestFp8Kernels)
#include "test_fp8_kernels.moc"
