// Placement: one rule for where a rank's state lives, read by the planner and the layouts alike.
// The rule against a table written by hand from docs/design (stages, offload, its directory, the
// device, the precision); the planner's plan carries the same placement and its bytes sit in the
// tiers it names; and the layouts built from it, on every split of the conformance matrix, keep
// their state where it says (the offload directory's files, the host account).
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <filesystem>
#include <stdexcept>

#include "conformance_setup.h"
#include "offload/offload_dir.h"
#include "rank_threads.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/param_count.h"
#include "trainbench/placement.h"

using namespace trainbench;

namespace {

constexpr Tier D = Tier::Device, H = Tier::Host, F = Tier::File;

struct Expected {
    bool moments_sharded, gradients_sharded, weights_sharded;
    bool host_step;
    Tier moments, master, gradient_sums, weights;
    bool bf16_device_weights;
};

RunConfig configWith(int64_t stage, const char* offload, bool dir, const char* device, const char* dtype) {
    RunConfig c = withSplit(conformanceConfig(), 2, 2, 2);
    c.runtime.zero_stage = stage;
    c.runtime.offload = offload;
    c.runtime.offload_dir = dir ? "/tmp/trainbench-placement-never-written" : "";
    c.runtime.device = device;
    c.runtime.dtype = dtype;
    return c;
}

QString describe(const RunConfig& c) {
    return QString("stage %1 offload %2%3 on %4 in %5")
        .arg(c.runtime.zero_stage)
        .arg(QString::fromStdString(c.runtime.offload), c.runtime.offload_dir.empty() ? "" : " (offload_dir)",
             QString::fromStdString(c.runtime.device), QString::fromStdString(c.runtime.dtype));
}

}  // namespace

class TestPlacement : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The rule, row by row, as docs/design/layouts.md and offload.md state it.
    void theRuleByHand_data() {
        QTest::addColumn<int>("stage");
        QTest::addColumn<QString>("offload");
        QTest::addColumn<bool>("dir");
        QTest::addColumn<QString>("device");
        QTest::addColumn<QString>("dtype");
        QTest::addColumn<bool>("sums_off_device");
        QTest::addColumn<void*>("expected");
        // Columns of Expected: sharded moments, gradients, weights; host step; tiers of the
        // moments, the master, the gradient sums, the weights; bf16 device weights.
        static const Expected rows[] = {
            {false, false, false, false, D, D, D, D, false},  // 0: plain data parallelism
            {true, false, false, false, D, D, D, D, false},   // 1: the moments sharded
            {true, true, false, false, D, D, D, D, false},    // 2: and the gradient sums
            {true, true, true, false, D, D, D, D, false},     // 3: and the weights
            {true, false, false, true, H, H, D, D, true},     // 1 + optimizer on a GPU in bf16
            {true, false, false, true, H, H, D, D, false},    // the same in fp32
            {true, false, false, true, H, H, D, D, true},     // the same in fp8 (bf16 weights, quantised)
            {true, true, false, true, F, F, D, D, true},      // 2 + optimizer + offload_dir on a GPU
            {true, true, false, true, H, H, H, D, true},      // 2 + optimizer, sums the device cannot keep
            {true, true, true, true, H, H, H, H, true},       // 3 + all, sums off too
            {true, true, true, true, F, F, D, F, true},       // 3 + all + offload_dir
            {true, false, false, false, H, D, D, D, false},   // CPU ranks + optimizer: no host step
            {true, true, true, false, H, H, D, H, false},     // CPU ranks + all: the shards' home is the master
            {true, true, false, false, H, D, D, D, false},    // CPU ranks: the sums cannot leave (one memory)
        };
        QTest::newRow("stage 0") << 0 << "none" << false << "cuda" << "bf16" << false << (void*)&rows[0];
        QTest::newRow("stage 1") << 1 << "none" << false << "cuda" << "bf16" << false << (void*)&rows[1];
        QTest::newRow("stage 2") << 2 << "none" << false << "cuda" << "bf16" << true << (void*)&rows[2];
        QTest::newRow("stage 3") << 3 << "none" << false << "cpu" << "fp32" << false << (void*)&rows[3];
        QTest::newRow("1 optimizer bf16") << 1 << "optimizer" << false << "cuda" << "bf16" << false << (void*)&rows[4];
        QTest::newRow("1 optimizer fp32") << 1 << "optimizer" << false << "cuda" << "fp32" << false << (void*)&rows[5];
        QTest::newRow("1 optimizer fp8") << 1 << "optimizer" << false << "cuda" << "fp8" << false << (void*)&rows[6];
        QTest::newRow("2 optimizer dir") << 2 << "optimizer" << true << "cuda:0,1" << "auto" << false << (void*)&rows[7];
        QTest::newRow("2 optimizer sums off") << 2 << "optimizer" << false << "cuda" << "bf16" << true << (void*)&rows[8];
        QTest::newRow("3 all sums off") << 3 << "all" << false << "cuda" << "bf16" << true << (void*)&rows[9];
        QTest::newRow("3 all dir") << 3 << "all" << true << "cuda" << "bf16" << false << (void*)&rows[10];
        QTest::newRow("cpu 1 optimizer") << 1 << "optimizer" << false << "cpu" << "fp32" << false << (void*)&rows[11];
        QTest::newRow("cpu 3 all") << 3 << "all" << false << "cpu" << "bf16" << false << (void*)&rows[12];
        QTest::newRow("cpu 2 sums") << 2 << "optimizer" << false << "cpu" << "fp32" << true << (void*)&rows[13];
    }
    void theRuleByHand() {
        QFETCH(int, stage);
        QFETCH(QString, offload);
        QFETCH(bool, dir);
        QFETCH(QString, device);
        QFETCH(QString, dtype);
        QFETCH(bool, sums_off_device);
        QFETCH(void*, expected);
        const Expected& e = *static_cast<const Expected*>(expected);
        const RunConfig c = configWith(stage, qPrintable(offload), dir, qPrintable(device), qPrintable(dtype));
        requireValidRunConfig(c);
        PlacementQuery query;
        query.device = device.startsWith("cuda") ? DeviceType::Cuda : DeviceType::Cpu;
        query.gradient_sums_off_device = sums_off_device;
        const Placement p = placementFor(c, query);
        QCOMPARE(p.sharded.moments, e.moments_sharded);
        QCOMPARE(p.sharded.gradients, e.gradients_sharded);
        QCOMPARE(p.sharded.weights, e.weights_sharded);
        QCOMPARE(p.host_step, e.host_step);
        QCOMPARE(tierName(p.moments), tierName(e.moments));
        QCOMPARE(tierName(p.master), tierName(e.master));
        QCOMPARE(tierName(p.gradient_sums), tierName(e.gradient_sums));
        QCOMPARE(tierName(p.weights), tierName(e.weights));
        QCOMPARE(p.bf16_device_weights, e.bf16_device_weights);
        QCOMPARE(deviceTypeOf(c.runtime), query.device);
    }

    // The CPU ranks' test hooks: the GPU path on CPU ranks steps on the host, and the kernels
    // off (autocast) hold bf16 weights there as a GPU would; fp64 reference runs round nothing.
    void theHooksTakeTheGpuPath() {
        const RunConfig c = configWith(2, "optimizer", false, "cpu", "bf16");
        PlacementQuery query;
        query.host_step_on_cpu = true;
        query.gradient_sums_off_device = true;
        Placement p = placementFor(c, query);
        QVERIFY(p.host_step);
        QCOMPARE(tierName(p.gradient_sums), "host");
        QVERIFY(!p.bf16_device_weights);  // the CPU kernels round their operands themselves
        query.cpu_autocast = true;
        QVERIFY(placementFor(c, query).bf16_device_weights);
        query.fp64 = true;
        QVERIFY(!placementFor(c, query).bf16_device_weights);
        // fp8 on CPU ranks runs its other products in fp32, autocast or not: fp32 weights there.
        RunConfig fp8 = c;
        fp8.runtime.dtype = "fp8";
        query.fp64 = false;
        QVERIFY(!placementFor(fp8, query).bf16_device_weights);
        query.device = DeviceType::Cuda;
        QVERIFY(placementFor(fp8, query).bf16_device_weights);
        query.fp64 = true;
        QVERIFY(!placementFor(fp8, query).bf16_device_weights);
    }

    // The gradient sums go to offload_dir's file only under the unit order, at stages 2 and 3,
    // with the optimizer's state in files, and only when asked (the planner's answer): on a GPU
    // (host step) and on CPU ranks alike.
    void theGradientSumsGoToAFileOnlyUnderTheUnitOrder() {
        for (const char* device : {"cpu", "cuda"})
            for (int stage = 1; stage <= 3; ++stage)
                for (bool dir : {false, true})
                    for (const char* schedule : {"micro_batch", "unit"}) {
                        RunConfig c = configWith(stage, "optimizer", dir, device, "fp32");
                        c.runtime.activation_checkpointing = "full";
                        c.runtime.window_schedule = schedule;
                        PlacementQuery query;
                        query.device = deviceTypeOf(c.runtime);
                        query.gradient_sums_off_device = true;
                        QCOMPARE(tierName(placementFor(c, query).gradient_sums),
                                 query.device == DeviceType::Cuda && stage >= 2 ? "host" : "device");
                        query.gradient_sums_in_file = true;
                        const Placement p = placementFor(c, query);
                        const bool file = stage >= 2 && dir && std::string(schedule) == "unit";
                        QCOMPARE(p.gradientSumsMayGoToFile(), file);
                        const char* otherwise = query.device == DeviceType::Cuda && stage >= 2 ? "host" : "device";
                        QCOMPARE(tierName(p.gradient_sums), file ? "file" : otherwise);
                    }
    }

    // The unit order's boundary activations: in host memory only on a GPU (a CPU rank's host
    // memory is its device's), in offload_dir's file on either when asked and the directory is
    // set; never away from the device under the micro-batch order, which keeps none.
    void theBoundariesGoToAFileOnlyWithOffloadDir() {
        for (const char* device : {"cpu", "cuda"})
            for (bool dir : {false, true})
                for (const char* schedule : {"micro_batch", "unit"}) {
                    RunConfig c = configWith(3, "all", dir, device, "fp32");
                    c.runtime.activation_checkpointing = "full";
                    c.runtime.window_schedule = schedule;
                    const bool unit = std::string(schedule) == "unit";
                    const bool gpu = std::string(device) == "cuda";
                    PlacementQuery query;
                    query.device = deviceTypeOf(c.runtime);
                    query.boundaries_off_device = true;
                    QCOMPARE(tierName(placementFor(c, query).boundaries), unit && gpu ? "host" : "device");
                    query.boundaries_in_file = true;
                    const char* otherwise = unit && gpu ? "host" : "device";
                    QCOMPARE(tierName(placementFor(c, query).boundaries), unit && dir ? "file" : otherwise);
                    query.boundaries_off_device = false;
                    QCOMPARE(tierName(placementFor(c, query).boundaries), unit && dir ? "file" : "device");
                }
    }

    // Every valid combination: the plan carries the placement the rule gives for the config's
    // device, and its bytes are in the tiers the placement names.
    void thePlannerReadsThePlacement() {
        int planned = 0;
        for (int stage = 0; stage <= 3; ++stage)
            for (const char* offload : {"none", "optimizer", "all"})
                for (bool dir : {false, true})
                    for (const char* device : {"cpu", "cuda"})
                        for (const char* dtype : {"fp32", "bf16", "fp8"}) {
                            if (dir && std::string(offload) == "none") continue;  // offload_dir is offload's
                            const RunConfig c = configWith(stage, offload, dir, device, dtype);
                            try {
                                requireValidRunConfig(c);
                            } catch (const ConfigError&) {
                                continue;  // offload below its stage
                            }
                            const QString row = describe(c);
                            PlacementQuery query;
                            query.device = deviceTypeOf(c.runtime);
                            const Placement rule = placementFor(c, query);
                            const MemoryPlan plan = planMemory(c);  // no budget: the sums stay
                            QVERIFY2(plan.placement == rule, qPrintable(row));
                            QCOMPARE(plan.host_moment_bytes > 0, rule.moments == Tier::Host);
                            QCOMPARE(plan.nvme_bytes > 0, rule.moments == Tier::File);
                            QCOMPARE(plan.host_master_bytes > 0, rule.master == Tier::Host);
                            QCOMPARE(plan.weight_element_bytes, rule.bf16_device_weights ? 2 : 4);
                            QCOMPARE(plan.gradients_on_host, false);
                            // Two fp32 moments of every parameter, or of a rank's 1/W of them.
                            const int64_t P = countParameters(c.model).total;
                            QCOMPARE(plan.optimizer_bytes, 2 * 4 * (rule.sharded.moments ? (P + 1) / 2 : P));
                            ++planned;
                            // A budget that cannot keep the sums moves them where the rule allows.
                            const MemoryPlan tight = planMemory(c, plan.peak_bytes - plan.gradient_bytes / 2);
                            query.gradient_sums_off_device = true;
                            QVERIFY2(tight.placement == placementFor(c, query), qPrintable(row));
                            QCOMPARE(tight.gradients_on_host, rule.gradientSumsMayLeaveDevice());
                        }
        // Stage 0: none; stages 1 and 2: none, optimizer, optimizer with a directory; stage 3: those
        // and all with and without one. Each on two devices in three precisions.
        QCOMPARE(planned, (1 + 3 + 3 + 5) * 2 * 3);
    }

    // The layouts on every split of the conformance matrix keep the state where the placement
    // says: the offload directory holds the moments' (and under all the shards') files exactly
    // when it names File, and the host account holds bytes exactly when something is off the
    // device.
    void theLayoutsKeepStateWhereItSays() {
        QTemporaryDir corpus_dir;
        const std::string corpus = writeRaggedCorpus(corpus_dir);
        const std::tuple<int64_t, int64_t, int64_t> splits[] = {{8, 1, 1}, {2, 4, 1}, {2, 2, 2}, {1, 4, 2}};
        for (const auto& [m, K, W] : splits)
            for (int stage = 1; stage <= 3; ++stage)
                for (const char* offload : {"none", "optimizer", "all"})
                    for (bool dir : {false, true}) {
                        if (std::string(offload) == "all" && stage != 3) continue;
                        if (std::string(offload) == "none" && dir) continue;
                        QTemporaryDir files;
                        RunConfig c = withSplit(raggedTextConfig(corpus), m, K, W);
                        c.train.steps = 1;
                        c.runtime.zero_stage = stage;
                        c.runtime.offload = offload;
                        if (dir) c.runtime.offload_dir = files.path().toStdString();
                        const QString row = describe(c) + QString(" m %1 K %2 W %3").arg(m).arg(K).arg(W);
                        RankThreadOptions options;
                        options.host_mirror = true;  // the GPU ranks' path: a host step
                        std::vector<MemoryAccount*> host_accounts;
                        options.host_accounts = &host_accounts;
                        PlacementQuery query;
                        query.host_step_on_cpu = true;
                        const Placement place = placementFor(c, query);
                        // Seen while the trainer lives (its scratch files go with it).
                        std::vector<int64_t> host_bytes(W);
                        std::vector<char> moments_files(W), shard_files(W);
                        onRankTrainers(c, options, [&](int r, RankTrainer& trainer) {
                            trainSteps(trainer, 1);
                            host_bytes[r] = host_accounts[r]->current.load();
                            namespace fs = std::filesystem;
                            moments_files[r] = dir && fs::exists(offloadFilePath(c.runtime.offload_dir, r, "all"));
                            shard_files[r] = dir && fs::exists(offloadFilePath(c.runtime.offload_dir, r, "all", "weights"));
                        });
                        for (int r = 0; r < W; ++r) {
                            const bool moments_file = moments_files[r], shard_file = shard_files[r];
                            QVERIFY2(moments_file == (place.moments == Tier::File), qPrintable(row));
                            QVERIFY2(shard_file == (place.weights == Tier::File), qPrintable(row));
                            QVERIFY2((host_bytes[r] > 0) == (place.moments != Tier::Device), qPrintable(row));
                        }
                    }
    }

    // A layout whose setup forgot its placement would be another layout than the config's:
    // refused, for the session's ranks and a test's alike.
    void aSetupWithoutItsPlacementIsRefused() {
        RunConfig c = withSplit(conformanceConfig(), 2, 2, 1);
        c.runtime.zero_stage = 2;
        RankGroups groups(1, 1);
        Transformer model(c.model);
        LayoutSetup setup;  // placement left at its default: nothing sharded
        setup.config = &c;
        setup.collectives = groups.world[0].get();
        bool refused = false;
        try {
            makeGradientLayout(setup, model, nullptr);
        } catch (const std::logic_error& e) {
            refused = QString(e.what()).contains("placement");
        }
        QVERIFY(refused);
    }
};

QTEST_GUILESS_MAIN(TestPlacement)
#include "test_placement.moc"
