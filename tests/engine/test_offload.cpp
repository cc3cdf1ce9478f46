// Offload suite (runtime.offload, runtime.offload_dir): the moment store's files against what was
// put in them, the conformance splits at every stage and under expert parallelism bitwise equal
// to the same split without offload (fp32 and fp64), the same through the GPU ranks' host step
// (its copies plain here) and its host slabs, a checkpoint of an offloaded run resumed without
// offload, the planner's tiers, and the refusals (docs/design/offload.md).
#include <QtTest/QtTest>

#include <map>

#include <QTemporaryDir>
#include <filesystem>
#include <fstream>

#include "cpu_paths_report.h"
#include "conformance_setup.h"
#include "offload_runs.h"
#include "comm/in_process_collectives.h"
#include "offload/direct_file.h"
#include "parallel/gradient_buckets.h"
#include "offload/host_slice_sums.h"
#include "offload/pinned_slabs.h"
#include "offload/slice_store.h"
#include "trainbench/batch_explorer.h"
#include "trainbench/param_count.h"
#include "rank_threads.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/metric_keys.h"
#include "trainbench/training_session.h"

using namespace trainbench;
namespace fs = std::filesystem;

namespace {

// Every case (m, K, W, stage, EP), fp32 and fp64: the weights of every rank after three steps
// with offload optimizer (and at stage 3 all), in host memory and in offload_dir's files, equal
// bitwise those of the same split without offload.
void expectTheNumbersWithoutOffload(const std::vector<SplitCase>& cases, OffloadPath path) {
    QTemporaryDir dir;
    for (const SplitCase& k : cases)
        for (bool fp64 : {false, true}) {
            const RunConfig plain = split(k.m, k.K, k.W, k.stage, k.EP);
            const auto reference = weightsAfter(plain, 3, fp64);
            for (const char* choice : {"optimizer", "all"})
                for (const std::string& where : {std::string(), dir.path().toStdString()}) {
                    if (std::string(choice) == "all" && k.stage < 3) continue;
                    const auto weights = weightsAfter(offloaded(plain, where, choice), 3, fp64, path);
                    const QString what = QString("(%1,%2,%3) stage %4 EP %5 %6 %7 %8%9")
                                             .arg(k.m).arg(k.K).arg(k.W).arg(k.stage).arg(k.EP)
                                             .arg(fp64 ? "fp64" : "fp32").arg(choice)
                                             .arg(where.empty() ? "host" : "offload_dir",
                                                  path == OffloadPath::Device     ? ""
                                                  : path == OffloadPath::HostStep ? " host step"
                                                                                  : " host step, sums on the host");
                    for (size_t r = 0; r < weights.size(); ++r)
                        for (size_t i = 0; i < weights[r].size(); ++i)
                            QVERIFY2(torch::equal(weights[r][i], reference[r][i]),
                                     qPrintable(what + QString(": rank %1 parameter %2 differs").arg(r).arg(i)));
                }
            QVERIFY2(fs::is_empty(dir.path().toStdString()), "scratch files left behind");
        }
}

std::vector<double> losses(const RunConfig& config, SessionOptions options = {}) {
    TrainingSession session(config, options);
    auto inbox = session.bus().subscribe();
    session.start();
    if (!session.wait(std::chrono::minutes(5))) qFatal("run did not finish");
    if (session.summary().status != RunStatus::Completed) qFatal("run failed: %s", session.summary().error.c_str());
    std::vector<double> out;
    for (const auto& p : inbox->drain().points)
        if (p.key == "train/loss") out.push_back(p.value);
    return out;
}

std::string refusedField(const RunConfig& config) {
    try {
        TrainingSession session(config);
    } catch (const ConfigError& e) {
        return e.path();
    }
    return "accepted";
}

}  // namespace

namespace {

// A run to its end: its summary, its losses and how many times it backed off (oom_backoff).
std::tuple<RunSummary, std::vector<double>, int> runCountingBackOffs(const RunConfig& config) {
    TrainingSession session(config);
    auto inbox = session.bus().subscribe();
    session.start();
    if (!session.wait(std::chrono::minutes(5))) qFatal("run did not finish");
    std::vector<double> losses;
    int backoffs = 0;
    const BusBatch batch = inbox->drain();
    for (const auto& p : batch.points)
        if (p.key == "train/loss") losses.push_back(p.value);
    for (const auto& e : batch.events) backoffs += e.kind == "oom_backoff";
    return std::tuple{session.summary(), losses, backoffs};
}

// A run that backed off trains on with the smaller micro-batch: every loss is the reference's
// to within 1e-5 (the same sums split another way).
void expectTheLossesOf(const std::vector<double>& losses, const std::vector<double>& reference) {
    QCOMPARE(losses.size(), reference.size());
    for (size_t i = 0; i < reference.size(); ++i)
        QVERIFY2(std::fabs(losses[i] - reference[i]) <= 1e-5 * std::fabs(reference[i]),
                 qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(losses[i]).arg(reference[i])));
}

}  // namespace

class TestOffload : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Buckets of odd sizes (not whole 512-byte sectors: the tails O_DIRECT must not drop), read
    // as zeros first, then what each was given, in another order and after the staging slots
    // have been reused; the file goes with the store.
    void theFileStoreGivesBackWhatWasPut() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("moments").toStdString();
        const std::vector<int64_t> numels = {1, 1000, 4097, 3, 70000};
        {
            auto store = makeFileSliceStore(path, numels, 2, torch::kFloat32);
            QVERIFY(fs::exists(path));
            std::vector<torch::Tensor> expected;
            for (size_t b = 0; b < numels.size(); ++b) {
                auto slices = store->acquire(b);
                auto first = slices[0], second = slices[1];
                store->prefetch(b + 1);
                QCOMPARE(first.abs().sum().item<double>(), 0.0);
                QCOMPARE(second.abs().sum().item<double>(), 0.0);
                first.copy_(torch::randn({numels[b]}));
                second.copy_(torch::rand({numels[b]}));
                expected.push_back(torch::cat({first, second}).clone());
                store->release(b, true);
            }
            store->flush();
            for (size_t b : {4, 0, 2, 1, 3, 2}) {
                auto slices = store->acquire(b);
                auto first = slices[0], second = slices[1];
                QVERIFY2(torch::equal(torch::cat({first, second}), expected[b]), qPrintable(QString("bucket %1").arg(b)));
                store->release(b, false);
            }
            // 5 buckets written once: every region's whole blocks.
            int64_t blocks = 0;
            for (int64_t n : numels) blocks += 2 * alignedUp(n * 4);
            QCOMPARE(store->bytesWritten(), blocks);
        }
        QVERIFY(!fs::exists(path));
    }

    // The conformance splits at stages 1-3, K = 1 among them, and expert parallelism at stages 1
    // and 3: with the moments (and at stage 3 with offload all the weights' shards) in host memory
    // or in offload_dir's files, every rank's weights after three steps are bitwise those of the
    // same split without offload (the same kernel on the same elements, bucket by bucket; the
    // same all-gathers from the same shards), in fp32 and in fp64.
    void everySplitAndStageGivesTheNumbersWithoutOffload() {
        expectTheNumbersWithoutOffload({{8, 1, 1, 1, 1}, {2, 4, 1, 2, 1}, {2, 2, 2, 1, 1}, {1, 4, 2, 2, 1}, {2, 2, 2, 3, 1},
                                        {2, 1, 4, 3, 1}, {2, 2, 2, 1, 2}, {1, 2, 4, 3, 2}, {8, 1, 1, 3, 1}, {1, 4, 2, 3, 1}},
                                       OffloadPath::Device);
    }

    // The host slabs: every request its own aligned region, none overlapping, packed into
    // slabs of the size asked (a larger request alone in one); a request past the list, or
    // larger than its region, names what the slabs hold.
    void theHostSlabsCarveAlignedViews() {
        PinnedSlabs::Options options;
        options.slab_bytes = 64 << 10;
        options.what = "the test's slices";
        const std::vector<int64_t> requests = {1000 * 4, 3, 40000 * 4, 70000 * 4, 1, 8 * 8};
        PinnedSlabs slabs(requests, options);
        QCOMPARE(slabs.slabCount(), int64_t(4));  // (4000, 3) | 160000 alone | 280000 alone | (1, 64)
        QVERIFY(!slabs.pinned());                 // no GPU here
        const torch::ScalarType dtypes[] = {torch::kFloat32, torch::kByte, torch::kFloat32, torch::kFloat32,
                                            torch::kByte, torch::kFloat64};
        std::vector<std::pair<uintptr_t, uintptr_t>> spans;
        for (size_t i = 0; i < requests.size(); ++i) {
            const int64_t numel = requests[i] / int64_t(torch::elementSize(dtypes[i]));
            torch::Tensor view = slabs.take(numel, dtypes[i]);
            QCOMPARE(view.numel(), numel);
            QCOMPARE(view.scalar_type(), dtypes[i]);
            QVERIFY(view.is_contiguous());
            const auto begin = reinterpret_cast<uintptr_t>(view.data_ptr());
            QCOMPARE(int64_t(begin % kSlabAlignment), int64_t(0));
            view.fill_(double(i + 1));
            spans.emplace_back(begin, begin + uintptr_t(requests[i]));
        }
        for (size_t i = 0; i < spans.size(); ++i)
            for (size_t j = i + 1; j < spans.size(); ++j)
                QVERIFY2(spans[i].second <= spans[j].first || spans[j].second <= spans[i].first,
                         qPrintable(QString("regions %1 and %2 overlap").arg(i).arg(j)));
        QVERIFY(slabs.bytes() >= 4000 + 160000 + 280000 + 64);
        try {
            slabs.take(1, torch::kFloat32);
            QFAIL("a seventh request was given a region");
        } catch (const std::length_error& e) {
            QVERIFY2(std::string(e.what()).find("the test's slices") != std::string::npos, e.what());
        }
        PinnedSlabs small({64}, options);
        try {
            small.take(1000, torch::kFloat32);
            QFAIL("4000 bytes were given a 256-byte region");
        } catch (const std::length_error& e) {
            QVERIFY2(std::string(e.what()).find("the test's slices") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("4000") != std::string::npos, e.what());
        }
    }

    // The GPU ranks' path on CPU ranks (host_mirror): the moments and a master of the rank's
    // slices in host slabs (or offload_dir's file), the gradient slices copied down, the kernel
    // on the master, the updated slices copied up before the all-gathers; under offload all the
    // shards in host slabs stepped in place. The copies are plain here, so every rank's weights
    // after three steps are bitwise those without offload, fp32 and fp64, stages 1-3.
    void theHostStepGivesTheNumbersWithoutOffload() {
        expectTheNumbersWithoutOffload({{8, 1, 1, 1, 1}, {2, 2, 2, 1, 1}, {1, 4, 2, 2, 1}, {2, 2, 2, 3, 1}, {2, 1, 4, 3, 1},
                                        {2, 2, 2, 1, 2}, {1, 2, 4, 3, 2}},
                                       OffloadPath::HostStep);
    }

    // The gradients' slice sums in host memory (stages 2 and 3, what a GPU that cannot keep them
    // does): every micro-batch's reduced slices come down as their reduce-scatters finish and are
    // added there in the same order, the update goes up into the gather buffer (stage 2) or the
    // shard: every rank's weights after three steps bitwise those without offload, K 1 and 4, W
    // 1, 2 and 4, expert parallelism, fp32 and fp64, host memory and offload_dir.
    void theGradientSumsOnTheHostGiveTheNumbersWithoutOffload() {
        expectTheNumbersWithoutOffload({{2, 4, 1, 2, 1}, {1, 4, 2, 2, 1}, {8, 1, 1, 3, 1}, {2, 2, 2, 3, 1}, {2, 1, 4, 3, 1},
                                        {1, 2, 4, 3, 2}, {1, 2, 4, 2, 2}},
                                       OffloadPath::HostStepSumsOnHost);
    }

    // The host's slice sums against the same additions made in place: three buckets and one,
    // each micro-batch's slices added as they come (the copies of two in flight, the oldest
    // landed first), bit for bit the device's running sums; zero() starts again from zero; the
    // host account holds the sums and two staging slices of the widest, 256-byte aligned.
    void theHostSliceSumsAddInTheDevicesOrder() {
        for (const std::vector<int64_t>& numels : {std::vector<int64_t>{1000, 37, 4096}, std::vector<int64_t>{513}}) {
            MemoryAccount* host = newMemoryAccount();
            HostSliceSums sums(numels, torch::kFloat32, torch::kCPU, host, torch::kFloat32);
            int64_t expected_bytes = 0, widest = 0;
            for (int64_t n : numels) {
                expected_bytes += (n * 4 + 255) / 256 * 256;
                widest = std::max(widest, n);
            }
            expected_bytes += 2 * ((widest * 4 + 255) / 256 * 256);
            QVERIFY2(host->current.load() >= expected_bytes && host->current.load() <= expected_bytes + 512,
                     qPrintable(QString("host account %1, expected %2").arg(host->current.load()).arg(expected_bytes)));
            for (int round = 0; round < 2; ++round) {
                std::vector<torch::Tensor> reference;
                for (int64_t n : numels) reference.push_back(torch::zeros({n}));
                torch::manual_seed(7 + round);
                for (int micro = 0; micro < 5; ++micro)
                    for (size_t b = 0; b < numels.size(); ++b) {
                        // Magnitudes far apart, so the order of the additions shows in the bits.
                        const torch::Tensor slice = torch::randn({numels[b]}) * std::pow(10.0, 3 * (micro % 3) - 3);
                        reference[b].add_(slice);
                        sums.add(b, slice.clone());
                    }
                for (size_t b = 0; b < numels.size(); ++b)
                    QVERIFY2(torch::equal(sums.sum(b), reference[b]), qPrintable(QString("bucket %1 round %2").arg(b).arg(round)));
                sums.zero();
                for (size_t b = 0; b < numels.size(); ++b) QCOMPARE(sums.sum(b).abs().sum().item<double>(), 0.0);
            }
        }
    }

    // Stage 1 under the host step (GradientBuckets::copySlicesDown), two rank threads: in a
    // window of two micro-batches whose last backward reduces each bucket as its gradients are
    // in, every bucket is launched during that backward and its reduced slice is on the host
    // when the window ends, equal to the device's slice and to the sums by hand (fp64 of each
    // rank's and micro-batch's gradients, exact in fp32 here); the host account holds one slice
    // of each bucket (256-byte aligned), and zero() forgets the copies.
    void stage1SlicesComeDownAsTheirReductionsFinish() {
        const int W = 2;
        const std::vector<int64_t> sizes{300, 17, 1000, 64, 200, 500};
        auto gradientOf = [&](size_t i, int rank, int micro) {
            // Small integers: every sum exact in fp32, whatever the order.
            return (torch::arange(sizes[i], torch::kFloat64).remainder(7) + double(rank * 10 + micro * 3 + int(i)));
        };
        const std::vector<std::string> failures = onCollectiveThreads(W, [&](int r, InProcessCollectives& collectives) {
            std::vector<torch::Tensor> params;
            for (int64_t n : sizes) params.push_back(torch::zeros({n}, torch::kFloat32).requires_grad_(true));
            GradientBuckets buckets(params, /*bucket_bytes=*/2048, /*first_bucket_bytes=*/512, /*shards=*/W);
            if (buckets.count() < 3) throw std::runtime_error("expected several buckets");
            MemoryAccount* host = newMemoryAccount();
            buckets.copySlicesDown(host);
            int64_t expected_bytes = 0;
            for (int64_t n : buckets.sliceNumels()) expected_bytes += (n * 4 + 255) / 256 * 256;
            if (host->current.load() < expected_bytes || host->current.load() > expected_bytes + 512)
                throw std::runtime_error("host account " + std::to_string(host->current.load()) + ", expected " +
                                         std::to_string(expected_bytes));
            buckets.zero();
            buckets.beginOverlap(collectives, BucketReduction::ReduceScatter);
            for (int micro = 0; micro < 2; ++micro) {
                if (micro == 1) buckets.armHooks();
                torch::Tensor loss = torch::zeros({}, torch::kFloat32);
                for (size_t i = 0; i < params.size(); ++i)
                    loss = loss + (params[i] * gradientOf(i, r, micro).to(torch::kFloat32)).sum();
                loss.backward();
            }
            buckets.launchRemaining();
            if (buckets.launchedDuringBackward() != buckets.count())
                throw std::runtime_error("buckets launched during the backward: " +
                                         std::to_string(buckets.launchedDuringBackward()));
            buckets.finishOverlap();
            for (size_t b = 0; b < size_t(buckets.count()); ++b) {
                // The whole bucket by hand, then this rank's slice of it.
                torch::Tensor whole = torch::zeros({buckets.paddedNumel(b)}, torch::kFloat64);
                for (const GradientBuckets::Member& m : buckets.members(b))
                    for (int rank = 0; rank < W; ++rank)
                        for (int micro = 0; micro < 2; ++micro) whole.narrow(0, m.offset, m.numel).add_(gradientOf(m.param, rank, micro));
                const int64_t n = buckets.sliceNumel(b);
                const torch::Tensor expected = whole.narrow(0, r * n, n).to(torch::kFloat32);
                const torch::Tensor landed = buckets.landedSlice(b);
                if (!landed.defined()) throw std::runtime_error("bucket " + std::to_string(b) + " not on the host");
                if (!torch::equal(landed, buckets.slice(b, r)) || !torch::equal(landed, expected))
                    throw std::runtime_error("bucket " + std::to_string(b) + ": the host's slice differs");
            }
            buckets.zero();
            for (size_t b = 0; b < size_t(buckets.count()); ++b)
                if (buckets.landedSlice(b).defined()) throw std::runtime_error("a copy outlived zero()");
        });
        for (int r = 0; r < W; ++r) QVERIFY2(failures[r].empty(), qPrintable(QString("rank %1: %2").arg(r).arg(failures[r].c_str())));
    }

    // The gradient sums' tiers, by the accounts (stage 2, W 2, the host step), against hand counts
    // from the model's units (each unit a bucket padded to W, the rank's slice s_u 4 bytes an
    // element, every host region 256-byte aligned): with the sums on the device the host account
    // holds the moments, the master and the last backward's copies of the sums, 4 regions of
    // each s_u; with them on the host, the same plus two staging slices of the widest s_u, and the
    // device account's peak is lower by nearly all of the sums.
    void theGradientSumsOnTheHostLeaveTheDeviceAccount() {
        RunConfig c = split(2, 2, 2, 2);
        c.model = tinyTestModel(512, 64);  // state large beside the activations
        c.runtime.offload = "optimizer";
        struct Peaks {
            int64_t device = 0, host = 0, sums = 0, widest = 0;
        };
        auto peaksOf = [&](bool sums_on_host) {
            std::vector<MemoryAccount*> accounts, host_accounts;
            RankThreadOptions options;
            options.host_mirror = true;
            options.gradient_sums_on_host = sums_on_host;
            options.accounts = &accounts;
            options.host_accounts = &host_accounts;
            Peaks peaks;
            onRankTrainers(c, options, [&](int r, RankTrainer& trainer) {
                for (int64_t step = 0; step < 2; ++step) {
                    WindowResult window;
                    if (trainer.accumulateWindow(step, window) != WindowOutcome::Complete) throw std::runtime_error("window");
                    trainer.applyUpdate(step, window);
                }
                if (r != 0) return;
                for (const auto& unit : trainer.model()->units()) {
                    int64_t numel = 0;
                    for (const auto& p : unit) numel += p.numel();
                    const int64_t region = ((numel + 1) / 2 * 4 + 255) / 256 * 256;
                    if (numel > 0) peaks.sums += region;
                    peaks.widest = std::max(peaks.widest, region);
                }
            });
            peaks.device = accounts[0]->peak.load();
            peaks.host = host_accounts[0]->peak.load();
            return peaks;
        };
        const Peaks on_device = peaksOf(false), on_host = peaksOf(true);
        // (each slab of plain host memory takes 256 bytes more, to align its first region)
        QVERIFY2(on_device.host >= 4 * on_device.sums && on_device.host <= 4 * on_device.sums + 4096,
                 qPrintable(QString("host account %1 with the sums on the device, 4 x their %2 by hand")
                                .arg(on_device.host).arg(on_device.sums)));
        const int64_t staging = on_host.host - on_device.host;
        QVERIFY2(std::llabs(staging - 2 * on_host.widest) <= 512,
                 qPrintable(QString("host account +%1 with the sums on the host, two staging slices %2 by hand")
                                .arg(staging).arg(2 * on_host.widest)));
        qInfo("stage 2, W 2: host account %lld bytes with the sums on the device, %lld on the host; device peak %lld "
              "and %lld; the slice sums %lld by hand",
              (long long)on_device.host, (long long)on_host.host, (long long)on_device.device,
              (long long)on_host.device, (long long)on_host.sums);
        QVERIFY2(double(on_device.device - on_host.device) >= 0.9 * double(on_host.sums),
                 qPrintable(QString("device peak %1 with the sums there, %2 without; the sums %3")
                                .arg(on_device.device).arg(on_host.device).arg(on_host.sums)));
    }

    // Ragged data (ranks count different targets) with an incomplete last window, through the
    // session: the losses with offload_dir are those without.
    void raggedDataAndAnIncompleteWindow() {
        QTemporaryDir dir;
        RunConfig base = raggedTextConfig(writeRaggedCorpus(dir));
        base.train.eval_every = 0;
        base.train.samples = 20;
        base = withSplit(base, 1, 4, 2);
        base.runtime.zero_stage = 2;
        const auto reference = losses(base);
        QCOMPARE(reference.size(), size_t(3));
        QTemporaryDir scratch;
        const auto with_offload = losses(offloaded(base, scratch.path().toStdString()));
        QCOMPARE(with_offload, reference);
    }

    // A checkpoint written with the moments in offload_dir's files resumes without offload (and
    // at another stage and world size) with the losses of the run that never stopped.
    void anOffloadedCheckpointResumesWithoutOffload() {
        const RunConfig plain = split(2, 2, 2, 1);
        const auto uninterrupted = losses(plain);
        QCOMPARE(uninterrupted.size(), size_t(4));
        QTemporaryDir checkpoints, scratch;
        RunConfig first = offloaded(plain, scratch.path().toStdString());
        first.train.checkpoint_every = 2;
        SessionOptions options;
        options.checkpoint_dir = checkpoints.path().toStdString();
        losses(first, options);
        const auto two = checkpointOfStep(options.checkpoint_dir, 2);
        for (const auto& [W, stage] : {std::pair<int64_t, int64_t>{2, 1}, {1, 0}}) {
            RunConfig rest = withSplit(plain, 2, 4 / W, W);
            rest.runtime.zero_stage = stage;
            SessionOptions resume;
            resume.resume_from = two.path;
            const auto tail = losses(rest, resume);
            QCOMPARE(tail.size(), size_t(2));
            for (size_t i = 0; i < 2; ++i)
                QVERIFY2(std::fabs(tail[i] - uninterrupted[2 + i]) <= 1e-5 * std::fabs(uninterrupted[2 + i]),
                         qPrintable(QString("W %1 stage %2 step %3: %4 vs %5").arg(W).arg(stage).arg(3 + i)
                                        .arg(tail[i], 0, 'g', 12).arg(uninterrupted[2 + i], 0, 'g', 12)));
        }
    }

    // A checkpoint of a run whose weights and moments lived in offload_dir's files (offload all,
    // stage 3) resumes at stage 3 with them in host memory, and without offload at stage 1 and
    // W 1; a checkpoint of a run without offload resumes with offload all: every tail has the
    // losses of the run that never stopped.
    void offloadAllCheckpointsResumeEitherWay() {
        const RunConfig plain = split(2, 2, 2, 3);
        const auto uninterrupted = losses(plain);
        QCOMPARE(uninterrupted.size(), size_t(4));
        QTemporaryDir checkpoints, scratch, plain_checkpoints;
        RunConfig first = offloaded(plain, scratch.path().toStdString(), "all");
        first.train.checkpoint_every = 2;
        SessionOptions options;
        options.checkpoint_dir = checkpoints.path().toStdString();
        QCOMPARE(losses(first, options), uninterrupted);
        RunConfig unoffloaded = plain;
        unoffloaded.train.checkpoint_every = 2;
        SessionOptions plain_options;
        plain_options.checkpoint_dir = plain_checkpoints.path().toStdString();
        losses(unoffloaded, plain_options);
        struct Resume {
            std::string from;
            int64_t W, stage;
            const char* offload;
        };
        const Resume resumes[] = {{checkpointOfStep(options.checkpoint_dir, 2).path, 2, 3, "all"},
                                  {checkpointOfStep(options.checkpoint_dir, 2).path, 2, 1, "none"},
                                  {checkpointOfStep(options.checkpoint_dir, 2).path, 1, 0, "none"},
                                  {checkpointOfStep(plain_options.checkpoint_dir, 2).path, 1, 3, "all"}};
        for (const Resume& r : resumes) {
            RunConfig rest = withSplit(plain, 2, 4 / r.W, r.W);
            rest.runtime.zero_stage = r.stage;
            rest.runtime.offload = r.offload;
            SessionOptions resume;
            resume.resume_from = r.from;
            const auto tail = losses(rest, resume);
            QCOMPARE(tail.size(), size_t(2));
            for (size_t i = 0; i < 2; ++i)
                QVERIFY2(std::fabs(tail[i] - uninterrupted[2 + i]) <= 1e-5 * std::fabs(uninterrupted[2 + i]),
                         qPrintable(QString("W %1 stage %2 %3 step %4: %5 vs %6").arg(r.W).arg(r.stage).arg(r.offload)
                                        .arg(3 + i).arg(tail[i], 0, 'g', 12).arg(uninterrupted[2 + i], 0, 'g', 12)));
        }
        QVERIFY2(fs::is_empty(scratch.path().toStdString()), "scratch files left behind");
    }

    // Offload all on CPU ranks: the weights' shards join the moments in the host account; the
    // device account keeps the unit gathered. Each account's peak is the planner's within 15 %
    // on a config whose state dominates.
    void offloadAllMovesTheShardsToTheHostAccount() {
        RunConfig plain = split(2, 2, 2, 3);
        plain.model = tinyTestModel(512, 64);
        auto summaryOf = [](const RunConfig& config) {
            TrainingSession session(config);
            session.start();
            if (!session.wait(std::chrono::minutes(5)) || session.summary().status != RunStatus::Completed) qFatal("run failed");
            return session.summary();
        };
        RunConfig all = plain;
        all.runtime.offload = "all";
        RunConfig optimizer = plain;
        optimizer.runtime.offload = "optimizer";
        const RunSummary with_all = summaryOf(all), with_optimizer = summaryOf(optimizer);
        const MemoryPlan planned = planMemory(all);
        const double host = double(with_all.host_peak_bytes), device = double(with_all.peak_memory_bytes);
        QVERIFY2(std::fabs(host / double(planned.host_bytes) - 1.0) < 0.15,
                 qPrintable(QString("host account %1, planned %2").arg(host).arg(planned.host_bytes)));
        QVERIFY2(std::fabs(device / double(planned.peak_bytes) - 1.0) < 0.15,
                 qPrintable(QString("device account %1, planned %2").arg(device).arg(planned.peak_bytes)));
        // The shards (4 bytes of every element of the rank's slices) moved between the accounts.
        const double shards = double(planned.host_master_bytes);
        QVERIFY(shards > 0);
        QVERIFY2(std::fabs(host - double(with_optimizer.host_peak_bytes) - shards) <= 0.01 * shards,
                 qPrintable(QString("host %1 with all, %2 with optimizer, shards %3").arg(host)
                                .arg(with_optimizer.host_peak_bytes).arg(shards)));
        QVERIFY2(double(with_optimizer.peak_memory_bytes) - device >= shards - 4096,
                 qPrintable(QString("device peak %1 with all, %2 with optimizer, shards %3").arg(device)
                                .arg(with_optimizer.peak_memory_bytes).arg(shards)));
    }

    // io/*: every step after the first rewrites each rank's moments and weight shards (offload
    // all with offload_dir): 12 bytes a parameter, in whole 4 KiB blocks per bucket and part;
    // and reads them back with the shards of every gather besides.
    void theFilesTrafficIsReportedEveryStep() {
        QTemporaryDir scratch;
        RunConfig c = offloaded(split(2, 2, 2, 3), scratch.path().toStdString(), "all");
        c.train.steps = 3;
        TrainingSession session(c);
        auto inbox = session.bus().subscribe();
        session.start();
        QVERIFY(session.wait(std::chrono::minutes(5)));
        QCOMPARE(int(session.summary().status), int(RunStatus::Completed));
        std::map<std::string, std::vector<double>> io;
        for (const auto& p : inbox->drain().points)
            if (p.key.rfind("io/", 0) == 0) io[p.key].push_back(p.value);
        QCOMPARE(io["io/write_bytes"].size(), size_t(3));
        QCOMPARE(io["io/read_gbps"].size(), size_t(3));
        const double params = double(countParameters(c.model).total);
        const double units = double(c.model.n_layers + 2), slack = 2 * units * 3 * 4096;  // per rank: a block a part and unit
        for (size_t step = 1; step < 3; ++step) {
            const double written = io["io/write_bytes"][step], read = io["io/read_bytes"][step];
            QVERIFY2(written >= 12 * params && written <= 12 * params + slack,
                     qPrintable(QString("step %1 wrote %2 bytes, 12 P = %3").arg(step + 1).arg(written).arg(12 * params)));
            QVERIFY2(read > written, qPrintable(QString("step %1 read %2, wrote %3").arg(step + 1).arg(read).arg(written)));
            QVERIFY(io["io/write_gbps"][step] > 0);
        }
        // Without offload_dir there are no files and no file traffic points; stage 3's gathers
        // are still counted (io/gathered_bytes, every step).
        RunConfig host = c;
        host.runtime.offload_dir.clear();
        TrainingSession quiet(host);
        auto quiet_inbox = quiet.bus().subscribe();
        quiet.start();
        QVERIFY(quiet.wait(std::chrono::minutes(5)));
        int gathered = 0;
        for (const auto& p : quiet_inbox->drain().points) {
            if (p.key == metric::kShardGatheredBytes) {
                ++gathered;
                QVERIFY(p.value > 0);
                continue;
            }
            QVERIFY2(p.key.rfind("io/", 0) != 0, p.key.c_str());
        }
        QCOMPARE(gathered, 3);
    }

    // The explorer over layouts: with runtime.offload set, every layout that can offload is also
    // measured with it (optimizer from stage 1, all at stage 3, to the config's directory), the
    // rows without offload as before; a row carries its offload and trains with it.
    void theExplorerMeasuresOffloadLayouts() {
        RunConfig c = split(2, 2, 2, 1);
        c.runtime.offload = "all";
        c.runtime.zero_stage = 3;
        c.runtime.offload_dir = "/work/some-dir";
        const auto rows = explorationRows(c, 0, true);
        int none = 0, optimizer = 0, all = 0;
        for (const MemoryLayout& row : rows) {
            if (row.offload == "none") {
                ++none;
                QVERIFY(!row.nvme);
                continue;
            }
            QVERIFY(row.zero_stage >= 1);
            QVERIFY(row.nvme);
            if (row.offload == "optimizer") ++optimizer;
            if (row.offload == "all") {
                QCOMPARE(row.zero_stage, int64_t(3));
                ++all;
            }
        }
        QVERIFY(none > 0 && optimizer > 0 && all > 0);
        // Every layout from stage 1 once more with optimizer; the stage 3 ones once more with all.
        int sharded = 0, third = 0;
        for (const MemoryLayout& row : rows)
            if (row.offload == "none") sharded += row.zero_stage >= 1, third += row.zero_stage == 3;
        QCOMPARE(optimizer, sharded);
        QCOMPARE(all, third);
        // Without offload asked, no offload rows.
        c.runtime.offload = "none";
        c.runtime.offload_dir.clear();
        for (const MemoryLayout& row : explorationRows(c, 0, true)) QCOMPARE(row.offload, std::string("none"));

        // The config's own layout, offloaded: each row measured with it.
        QTemporaryDir scratch;
        RunConfig own = offloaded(split(2, 2, 2, 3), scratch.path().toStdString(), "all");
        ExploreOptions options;
        options.steps_per_row = 2;
        const ExploreResult result = exploreBatchSplits(own, 0, options);
        QVERIFY(!result.rows.empty());
        for (const ExploreRow& row : result.rows) {
            QCOMPARE(row.offload, std::string("all"));
            QVERIFY2(row.fits, row.note.c_str());
            QVERIFY(row.tokens_per_s > 0);
        }
        QVERIFY(exploreResultToJson(result).find("\"offload\":\"all\"") != std::string::npos);
    }

    // An out-of-memory back-off under offload (the moments and the shards in offload_dir's files):
    // the dropped window changes nothing in the files, the micro-batch halves, and every loss is
    // that of a run started at the smaller micro-batch without offload.
    void anOutOfMemoryBackOffUnderOffloadKeepsTheLosses() {
        QTemporaryDir scratch(QDir::currentPath() + QStringLiteral("/offload-XXXXXX"));
        const auto run = runCountingBackOffs;
        RunConfig base = split(8, 2, 1, 3);
        base.model.inter_dim = 1024;  // activations that grow with m well beyond the budget's MiB rounding
        base.train.seq_len = 256;     // and beyond what the host tier's staging adds at m = 1
        base.model.max_seq_len = 256;
        base.train.steps = 4;
        RunConfig small = withSplit(base, 4, 4, 1);
        const auto [small_summary, reference, none] = run(small);
        QCOMPARE(none, 0);
        // A budget above m = 4's peak with everything offloaded and below m = 8's, and above
        // what the planner puts at m = 1 with the host tier's staging buffers (on CPU ranks the
        // same memory: a budget below that is refused before training).
        RunConfig offloaded_small = offloaded(small, scratch.path().toStdString(), "all");
        const int64_t fits = std::get<0>(run(offloaded_small)).peak_memory_bytes;
        const int64_t too_much = std::get<0>(run(offloaded(base, scratch.path().toStdString(), "all"))).peak_memory_bytes;
        RunConfig limited = offloaded(base, scratch.path().toStdString(), "all");
        RunConfig one = limited;
        one.train.micro_batch_size = 1;
        const MemoryPlan at_one = planMemory(one);
        limited.runtime.memory_limit_mb = std::max(fits, at_one.peak_bytes + at_one.host_bytes) / (1 << 20) + 1;  // whole MiB
        QVERIFY2(too_much > limited.runtime.memory_limit_mb << 20,
                 qPrintable(QString("m 8: %1, m 4: %2").arg(too_much).arg(fits)));
        const auto [summary, losses, backoffs] = run(limited);
        QCOMPARE(int(summary.status), int(RunStatus::Completed));
        QCOMPARE(backoffs, 1);
        QCOMPARE(summary.micro_batch_size, int64_t(4));
        expectTheLossesOf(losses, reference);
        QVERIFY2(fs::is_empty(scratch.path().toStdString()), "scratch files left behind");
    }

    // On CPU ranks runtime.memory_limit_mb holds the device's account and the host tier's
    // together (one memory, as `plan` counts them): a budget above the device's peak at m = 8 but
    // below it with the host tier's moments beside backs the run off to m = 4, where the device
    // account alone let m = 8 run, and the losses are m = 8's.
    void theBudgetOnCpuRanksHoldsBothTiers() {
        RunConfig base = split(8, 2, 1, 1);
        base.model.inter_dim = 1024;    // activations that grow with m beyond the budget's MiB rounding
        base.model.vocab_size = 8192;   // and moments of some MiB on the host tier
        base.data.vocab_size = 8192;
        base.train.seq_len = 128;
        base.model.max_seq_len = 128;
        base.train.steps = 3;
        const RunConfig host = offloaded(base, "", "optimizer");
        const auto [at8, reference, none8] = runCountingBackOffs(host);
        const auto [at4, unused, none4] = runCountingBackOffs(withSplit(host, 4, 4, 1));
        QCOMPARE(none8 + none4, 0);
        const int64_t tier = at8.host_peak_bytes, mib = 1 << 20;
        QVERIFY2(tier > 2 * mib && at8.peak_memory_bytes > at4.peak_memory_bytes + 2 * mib,
                 qPrintable(QString("host %1, device at 8 %2, at 4 %3").arg(tier).arg(at8.peak_memory_bytes).arg(at4.peak_memory_bytes)));
        RunConfig limited = host;
        limited.runtime.memory_limit_mb = std::max(at4.peak_memory_bytes + tier, at8.peak_memory_bytes) / mib + 1;
        const int64_t budget = limited.runtime.memory_limit_mb * mib;
        QVERIFY(budget > at8.peak_memory_bytes);  // the device's account alone: no back-off
        QVERIFY(budget < at8.peak_memory_bytes + tier);
        const auto [summary, losses, backoffs] = runCountingBackOffs(limited);
        QCOMPARE(int(summary.status), int(RunStatus::Completed));
        QCOMPARE(backoffs, 1);
        QCOMPARE(summary.micro_batch_size, int64_t(4));
        expectTheLossesOf(losses, reference);
    }

    // On CPU ranks the tiers are accounts: with the moments offloaded to host memory the rank's
    // device account peaks lower by at least their bytes, and its host account holds them.
    void theDeviceAccountPeaksLowerByTheMoments() {
        RunConfig plain = split(2, 2, 2, 1);
        plain.model = tinyTestModel(512, 64);  // state large beside the activations
        RunConfig host = plain;
        host.runtime.offload = "optimizer";
        auto summaryOf = [](const RunConfig& config) {
            TrainingSession session(config);
            session.start();
            if (!session.wait(std::chrono::minutes(5)) || session.summary().status != RunStatus::Completed) qFatal("run failed");
            return session.summary();
        };
        const RunSummary none = summaryOf(plain), offloaded = summaryOf(host);
        QCOMPARE(none.host_peak_bytes, int64_t(0));
        const int64_t without = none.peak_memory_bytes, with = offloaded.peak_memory_bytes;
        const double host_bytes = double(offloaded.host_peak_bytes);
        // The host account holds the moments (the planner's count within its slice rounding)...
        const double moments = double(planMemory(plain).optimizer_bytes);
        QVERIFY2(std::fabs(host_bytes - moments) <= 0.01 * moments,
                 qPrintable(QString("host account %1, planned moments %2").arg(host_bytes).arg(moments)));
        // ...and the device account's peak went down by all of them (give or take the few bytes
        // of bookkeeping tensors whose lifetimes shift the peak from run to run).
        QVERIFY2(double(without - with) >= host_bytes - 4096,
                 qPrintable(QString("peak %1 without, %2 with offload: %3 less, moments %4").arg(without).arg(with)
                                .arg(without - with).arg(host_bytes)));
    }

    // The planner moves the moments off the peak: to host memory, or to offload_dir with the two
    // staging slots in host memory.
    void thePlannerPutsTheMomentsInTheirTier() {
        const RunConfig plain = split(2, 2, 2, 1);
        const MemoryPlan none = planMemory(plain);
        RunConfig host = plain;
        host.runtime.offload = "optimizer";
        const MemoryPlan in_host = planMemory(host);
        QCOMPARE(in_host.peak_bytes, none.peak_bytes - none.optimizer_bytes);
        QCOMPARE(in_host.host_bytes, none.optimizer_bytes);
        QCOMPARE(in_host.nvme_bytes, int64_t(0));
        const MemoryPlan on_disk = planMemory(offloaded(plain, "/tmp"));
        QCOMPARE(on_disk.peak_bytes, in_host.peak_bytes);
        QCOMPARE(on_disk.nvme_bytes, none.optimizer_bytes);
        // Two slots of two moments of the one bucket's slice (the model is smaller than a bucket).
        const int64_t params = none.gradient_bytes / 4;
        QCOMPARE(on_disk.host_bytes, 2 * 2 * ((params * 4 + 1) / 2));
    }

    // Each refusal names its field before anything runs.
    void badOffloadSettingsAreRefused() {
        const RunConfig plain = split(2, 2, 2, 1);
        RunConfig stage0 = plain;
        stage0.runtime.zero_stage = 0;
        stage0.runtime.offload = "optimizer";
        QCOMPARE(refusedField(stage0), std::string("runtime.offload"));
        RunConfig all_below_stage3 = plain;  // all moves the weights' shards: stage 3 only
        all_below_stage3.runtime.offload = "all";
        QCOMPARE(refusedField(all_below_stage3), std::string("runtime.offload"));
        // Offload on a GPU (the host step) is a valid config; on a machine without one the
        // session refuses the device, not the offload.
        RunConfig on_cuda = plain;
        on_cuda.runtime.zero_stage = 3;
        on_cuda.runtime.offload = "all";
        on_cuda.runtime.device = "cuda";
        for (const ConfigIssue& issue : validateRunConfig(on_cuda)) QFAIL(issue.message.c_str());
        if (!torch::cuda::is_available()) QCOMPARE(refusedField(on_cuda), std::string("runtime.device"));
        RunConfig unknown = plain;
        unknown.runtime.offload = "nvme";
        QCOMPARE(refusedField(unknown), std::string("runtime.offload"));
        RunConfig dir_only = plain;
        dir_only.runtime.offload_dir = "/tmp";
        QCOMPARE(refusedField(dir_only), std::string("runtime.offload_dir"));
        QCOMPARE(refusedField(offloaded(plain, "/nonexistent/offload")), std::string("runtime.offload_dir"));
        QTemporaryDir dir;
        const std::string file = dir.filePath("a-file").toStdString();
        std::ofstream(file) << "x";
        QCOMPARE(refusedField(offloaded(plain, file)), std::string("runtime.offload_dir"));
        QCOMPARE(refusedField(offloaded(plain, "/proc")), std::string("runtime.offload_dir"));  // not writable
        QCOMPARE(refusedField(offloaded(plain, dir.path().toStdString())), std::string("accepted"));
    }
};

QTEST_GUILESS_MAIN(TestOffload)
#include "test_offload.moc"
