// runtime.gradient_sum_dtype suite: the gradient slice sums of ZeRO stages 2 and 3 kept in bf16.
// The buckets' sums against a hand computation (each micro-batch's reduced fp32 slice added and
// the result rounded to bf16, rounding written out here on the bits) in every tier the sums wait
// in: the device, host memory (summed there, or copied down), offload_dir's file; a run's numbers
// the same bits in every tier and under both window orders; how far they move from fp32 sums'.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <cstring>

#include "cpu_paths_report.h"
#include "offload_runs.h"
#include "parallel/gradient_buckets.h"
#include "rank_threads.h"

using namespace trainbench;

namespace {

// fp32 to bf16, round to nearest, ties to even, on the bits (finite values only).
float roundToBf16(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    bits &= 0xFFFF0000u;
    std::memcpy(&x, &bits, 4);
    return x;
}

// Rank r's gradient of parameter i in micro-batch k: magnitudes a thousand apart from one
// micro-batch to the next, so that the sums' roundings show.
std::vector<float> gradientOf(int64_t numel, size_t i, int rank, int micro) {
    std::vector<float> out(static_cast<size_t>(numel));
    for (int64_t j = 0; j < numel; ++j)
        out[size_t(j)] = float(std::sin(0.37 * double(j) + double(rank) + 3.0 * micro + double(i)) *
                               std::pow(10.0, double(micro % 3) - 1.0));
    return out;
}

}  // namespace

class TestGradientSumDtype : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Three parameters of odd sizes, one bucket each, over two rank threads, three micro-batches:
    // bucket b's slice sum on rank r after the window is, element by element, s_0 = 0,
    // s_k = bf16(fp32(s_{k-1} + fp32(g_0k + g_1k))) (the reduce-scatter's fp32 sum of both ranks'
    // gradients, then the addition in fp32 rounded to bf16), by hand; so on the device, in host
    // memory (the reduced fp32 slices come down into fp32 staging and are added there), copied
    // down at the window's last micro-batch, and in offload_dir's file. The sums are bf16 and
    // differ from the fp32 sums in most elements (the rounding is real); the host account holds
    // 2 bytes an element of the sums and 4 of the two staging slices.
    void theSumsRoundEachAdditionInEveryTier() {
        const int W = 2, K = 3;
        const std::vector<int64_t> sizes{300, 17, 1001};
        QTemporaryDir dir;
        for (SliceSums where : {SliceSums::OnDevice, SliceSums::OnHost, SliceSums::CopiedDown, SliceSums::InFile}) {
            const std::vector<std::string> failures = onCollectiveThreads(W, [&](int r, InProcessCollectives& collectives) {
                std::vector<torch::Tensor> params;
                for (int64_t n : sizes) params.push_back(torch::zeros({n}, torch::kFloat32).requires_grad_(true));
                MemoryAccount* host = newMemoryAccount();
                SliceSumOptions options;
                options.where = where;
                options.host_account = host;
                options.dtype = torch::kBFloat16;
                if (where == SliceSums::InFile) options.file = dir.filePath(QString("sums-%1").arg(r)).toStdString();
                GradientBuckets buckets(params, {{2}, {1}, {0}}, W, /*transient=*/true, options);
                if (where == SliceSums::OnHost) {
                    int64_t expected = 0, widest = 0;
                    for (int64_t n : buckets.sliceNumels()) {
                        expected += (n * 2 + 255) / 256 * 256;
                        widest = std::max(widest, n);
                    }
                    expected += 2 * ((widest * 4 + 255) / 256 * 256);
                    if (host->current.load() < expected || host->current.load() > expected + 512)
                        throw std::runtime_error("host account " + std::to_string(host->current.load()) + ", expected " +
                                                 std::to_string(expected));
                }
                buckets.zero();
                for (int micro = 0; micro < K; ++micro) {
                    buckets.beginMicroBatch(collectives, /*hooks=*/false, /*last=*/micro + 1 == K);
                    torch::Tensor loss = torch::zeros({}, torch::kFloat32);
                    for (size_t i = 0; i < params.size(); ++i)
                        loss = loss + (params[i] * torch::tensor(gradientOf(sizes[i], i, r, micro))).sum();
                    loss.backward();
                    buckets.endMicroBatch();
                }
                int64_t rounded_apart = 0, elements = 0;
                for (size_t b = 0; b < size_t(buckets.count()); ++b) {
                    const size_t i = buckets.members(b).front().param;
                    const int64_t n = buckets.sliceNumel(b);
                    torch::Tensor got;
                    if (where == SliceSums::InFile) got = buckets.acquireSum(b).clone();
                    else if (where == SliceSums::CopiedDown) got = buckets.landedSlice(b);
                    else got = buckets.slice(b, r);
                    if (where == SliceSums::InFile) buckets.releaseSum(b);
                    if (!got.defined() || got.scalar_type() != torch::kBFloat16 || got.numel() != n)
                        throw std::runtime_error("bucket " + std::to_string(b) + ": no bf16 sum of the slice's length");
                    const torch::Tensor values = got.to(torch::kFloat32).contiguous();
                    for (int64_t e = 0; e < n; ++e) {
                        const int64_t j = r * n + e;  // the element of the parameter (padding: zeros)
                        float sum = 0.0f;
                        double wide = 0.0;
                        for (int micro = 0; micro < K; ++micro) {
                            const double g0 = j < sizes[i] ? gradientOf(sizes[i], i, 0, micro)[size_t(j)] : 0.0;
                            const double g1 = j < sizes[i] ? gradientOf(sizes[i], i, 1, micro)[size_t(j)] : 0.0;
                            const float reduced = float(g0 + g1);
                            sum = roundToBf16(float(double(sum) + double(reduced)));
                            wide += double(reduced);
                        }
                        if (values[e].item<float>() != sum)
                            throw std::runtime_error("bucket " + std::to_string(b) + " element " + std::to_string(e) + ": " +
                                                     std::to_string(values[e].item<float>()) + " against " +
                                                     std::to_string(sum) + " by hand");
                        rounded_apart += double(sum) != double(float(wide));
                        ++elements;
                    }
                }
                if (rounded_apart * 2 < elements)
                    throw std::runtime_error("only " + std::to_string(rounded_apart) + " of " + std::to_string(elements) +
                                             " sums differ from fp32's: the case does not test the rounding");
            });
            for (int r = 0; r < W; ++r)
                QVERIFY2(failures[r].empty(), qPrintable(QString("tier %1, rank %2: %3").arg(int(where)).arg(r).arg(failures[r].c_str())));
        }
    }

    // A run with bf16 sums: every rank's weights after three steps the same bits whether the sums
    // wait on the device, come down under the host step, are summed in host memory (under the
    // unit order each unit's copied down once finished), or (under the unit order, with the
    // optimizer's state in offload_dir) wait in its file; unit against micro_batch; stage 2 and
    // stage 3 (offload all). The numbers differ from fp32 sums'.
    void aRunGivesTheSameBitsInEveryTierAndOrder() {
        QTemporaryDir dir;
        for (const SplitCase& k : std::vector<SplitCase>{{1, 4, 2, 2, 1}, {2, 2, 2, 3, 1}}) {
            RunConfig c = split(k.m, k.K, k.W, k.stage, k.EP);
            c.runtime.gradient_sum_dtype = "bf16";
            c.runtime.activation_checkpointing = "full";
            const auto reference = weightsAfter(c, 3, false);
            const QString at = QString("(%1,%2,%3) stage %4").arg(k.m).arg(k.K).arg(k.W).arg(k.stage);
            RunConfig fp32_sums = c;
            fp32_sums.runtime.gradient_sum_dtype = "fp32";
            const auto wide = weightsAfter(fp32_sums, 3, false);
            bool any_differs = false;
            for (size_t i = 0; i < wide[0].size(); ++i) any_differs = any_differs || !torch::equal(wide[0][i], reference[0][i]);
            QVERIFY2(any_differs, qPrintable(at + ": bf16 sums gave fp32 sums' weights"));
            struct Case {
                const char* schedule;
                const char* offload;
                bool in_dir;
                OffloadPath path;
            };
            const std::vector<Case> cases{{"unit", "none", false, OffloadPath::Device},
                                          {"micro_batch", "optimizer", false, OffloadPath::HostStep},
                                          {"micro_batch", "optimizer", false, OffloadPath::HostStepSumsOnHost},
                                          {"unit", "optimizer", false, OffloadPath::HostStepSumsOnHost},
                                          {"unit", "optimizer", true, OffloadPath::SumsInFile},
                                          {"unit", k.stage == 3 ? "all" : "optimizer", true, OffloadPath::HostStepSumsInFile}};
            for (const Case& t : cases) {
                RunConfig run = std::string(t.offload) == "none" ? c : offloaded(c, t.in_dir ? dir.path().toStdString() : "", t.offload);
                run.runtime.window_schedule = t.schedule;
                const auto weights = weightsAfter(run, 3, false, t.path);
                const QString what = at + QString(" %1, offload %2%3, path %4")
                                              .arg(t.schedule, t.offload, t.in_dir ? " in offload_dir" : "")
                                              .arg(int(t.path));
                for (size_t r = 0; r < weights.size(); ++r)
                    for (size_t i = 0; i < weights[r].size(); ++i)
                        QVERIFY2(torch::equal(weights[r][i], reference[r][i]),
                                 qPrintable(what + QString(": rank %1 parameter %2 differs").arg(r).arg(i)));
            }
        }
    }

    // Stages 0 and 1 keep no slice sums (their gradients accumulate in fp32 buckets): the setting
    // changes no bit there.
    void stagesZeroAndOneAreUnchanged() {
        for (int64_t stage : {0, 1}) {
            RunConfig c = split(1, 4, 2, stage);
            const auto wide = weightsAfter(c, 3, false);
            c.runtime.gradient_sum_dtype = "bf16";
            const auto narrow = weightsAfter(c, 3, false);
            for (size_t r = 0; r < wide.size(); ++r)
                for (size_t i = 0; i < wide[r].size(); ++i)
                    QVERIFY2(torch::equal(wide[r][i], narrow[r][i]),
                             qPrintable(QString("stage %1: rank %2 parameter %3 differs").arg(stage).arg(r).arg(i)));
        }
    }

    // How far bf16 sums move a step: each of the K additions rounds the running sum by at most
    // 2^-9 of it, so where no running sum is larger than twice the window's (a sum of K
    // like-sized, independent micro-batch gradients: its partial sums grow as sqrt(k)), the
    // window's sum is within K x 2^-8 of fp32's in norm: the first step's gradient norm within
    // that, and not the same.
    void theFirstNormIsWithinTheRoundingsBound() {
        const int64_t K = 4;
        RunConfig c = split(1, K, 2, 2);
        auto normOf = [&](const char* dtype) {
            RunConfig run = c;
            run.runtime.gradient_sum_dtype = dtype;
            double norm = 0;
            onRankTrainers(run, {}, [&](int r, RankTrainer& trainer) {
                trainSteps(trainer, 1, [&](const WindowResult& w) {
                    if (r == 0) norm = w.grad_norm;
                });
            });
            return norm;
        };
        const double wide = normOf("fp32"), narrow = normOf("bf16");
        qInfo("first step's gradient norm: fp32 sums %.9g, bf16 sums %.9g (relative %.3g)", wide, narrow,
              std::abs(narrow / wide - 1));
        QVERIFY(narrow != wide);
        QVERIFY(std::abs(narrow / wide - 1) <= double(K) * std::ldexp(1.0, -8));
    }
};

QTEST_GUILESS_MAIN(TestGradientSumDtype)
#include "test_gradient_sum_dtype.moc"
