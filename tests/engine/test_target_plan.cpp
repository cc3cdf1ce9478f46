// Target-machine suite: the named GPUs against their published memories, the offload tiers per
// rank and node counted by hand, the predicted step time term by term, what fits the published
// DeepSeek configs on the machines their guides name, and the target section's validation.
#include <QtTest/QtTest>

#include <cmath>

#include "trainbench/config_io.h"
#include "trainbench/machine_probe.h"
#include "trainbench/memory_plan.h"
#include "trainbench/param_count.h"
#include "trainbench/presets.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

#include "target_plan_setup.h"

using namespace trainbench;


class TestTargetPlan : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void namedGpusHaveTheirPublishedMemory() {
        // NVIDIA's names: A100 40 GB and 80 GB, H100 80 GB, H200 141 GB, B200 180 GB (DGX B200:
        // 1,440 GB for eight); the driver reports a little less than the name on the newer ones.
        const std::pair<TargetKind, double> published[] = {{TargetKind::A100_40, 40}, {TargetKind::A100_80, 80},
                                                           {TargetKind::H100_80, 80}, {TargetKind::H200_141, 141},
                                                           {TargetKind::B200_180, 180}};
        QCOMPARE(deviceKinds().size(), std::size(published));
        for (const auto& [kind, gib] : published) {
            const DeviceKind* k = findDeviceKind(kind);
            QVERIFY(k);
            const double memory_gib = double(k->memory_mib) / 1024.0;
            QVERIFY2(memory_gib <= gib && memory_gib > 0.99 * gib, k->name);
            // dense bf16 peaks: 312 (A100), 989 (H100, H200), 2,250 (B200) TFLOP/s
            QVERIFY(k->bf16_tflops == 312 || k->bf16_tflops == 989 || k->bf16_tflops == 2250);
        }
        QCOMPARE(findDeviceKind(TargetKind::A100_80)->fp8_tflops, 0.0);  // no fp8 on Ampere
    }

    void theTargetSectionResolvesItsNodes() {
        RunConfig c = tinyOn("h100-80", 16);
        TargetMachine t = resolveTarget(c);
        QVERIFY(t.gpu);
        QCOMPARE(t.devices, int64_t(16));
        QCOMPARE(t.nodes, int64_t(2));
        QCOMPARE(t.ranksPerNode(), int64_t(8));
        QCOMPARE(t.device_memory_bytes, int64_t(81559) * 1024 * 1024);
        QCOMPARE(t.compute_tflops, 989.0);
        QCOMPARE(t.label, std::string("16 x H100 80 GB"));
        c.runtime.dtype = "fp32";
        QCOMPARE(resolveTarget(c).compute_tflops, 67.0);
        // A figure set in the section wins over the kind's.
        c.target.host_memory_gib = 512;
        c.target.pcie_gbps = 12.5;
        t = resolveTarget(c);
        QCOMPARE(t.host_memory_bytes, int64_t(512) * 1024 * 1024 * 1024);
        QCOMPARE(t.pcie_gbps, 12.5);
        // Custom: the memory given; no rate known.
        c.target.kind = "custom";
        c.target.device_memory_gib = 24;
        t = resolveTarget(c);
        QCOMPARE(t.device_memory_bytes, int64_t(24) * 1024 * 1024 * 1024);
        QCOMPARE(t.compute_tflops, 0.0);
        // The config on the target: its world size, a GPU, this machine's budget gone.
        c.runtime.memory_limit_mb = 100;
        const RunConfig placed = configOnTarget(c, t);
        QCOMPARE(placed.runtime.world_size, int64_t(16));
        QCOMPARE(placed.runtime.device, std::string("cuda"));
        QCOMPARE(placed.runtime.memory_limit_mb, int64_t(0));
    }

    void hereIsThePlanOfTheRuntimeAsTyped() {
        RunConfig c = builtinTinyConfig();
        c.runtime.world_size = 2;
        c.runtime.zero_stage = 1;
        c.runtime.offload = "optimizer";
        const MemoryPlan expected = planMemory(c, deviceMemoryBytesPerRank(c));
        const MemoryPlan got = planOnTarget(c, resolveTarget(c));
        QCOMPARE(QString::fromStdString(memoryPlanToJson(got)), QString::fromStdString(memoryPlanToJson(expected)));
        QVERIFY(!resolveTarget(c).gpu);
    }

    void offloadTiersOnAGpuByHand() {
        QCOMPARE(countParameters(builtinTinyConfig().model).total, kTinyParams);
        QCOMPARE(countParameters(builtinTinyConfig().model).activated, kTinyActivated);
        RunConfig c = tinyOn("h100-80", 1);
        c.runtime.zero_stage = 1;
        c.runtime.offload = "optimizer";
        MemoryPlan p = planOnTarget(c, resolveTarget(c));
        const int64_t P = kTinyParams;
        // The linear layers' weights in bf16 on the device (the embedding fp32), an fp32 master
        // on the host
        const int64_t E = countParameters(builtinTinyConfig().model).embedding;
        QCOMPARE(p.weight_element_bytes, int64_t(2));
        QCOMPARE(p.weight_bytes, 2 * P + 2 * E);
        QCOMPARE(p.gradient_bytes, 4 * P);
        QVERIFY(!p.gradients_on_host);
        QCOMPARE(p.host_moment_bytes, 8 * P);
        QCOMPARE(p.host_master_bytes, 4 * P);
        QCOMPARE(p.host_gradient_bytes, int64_t(0));
        QCOMPARE(p.host_staging_bytes, 2 * 4 * P);  // the one bucket, moved and the next (the same here)
        QCOMPARE(p.host_bytes, 20 * P);
        QCOMPARE(p.peak_bytes, p.weight_bytes + p.gradient_bytes + p.bucket_bytes + p.activation_bytes + p.logits_bytes);
        QCOMPARE(p.host_limit_bytes, int64_t(2048) * 1024 * 1024 * 1024);

        // To the node's NVMe: the moments and the master in files, two slots of each in host memory.
        c.runtime.offload_dir = kPlannedOffloadDir;
        p = planOnTarget(c, resolveTarget(c));
        QCOMPARE(p.nvme_bytes, 12 * P);
        QCOMPARE(p.host_moment_bytes + p.host_master_bytes, int64_t(0));
        QCOMPARE(p.host_staging_bytes, 2 * 4 * P + 2 * 4 * P * 3);

        // Offload all on two devices at stage 3: the unit gathered and the next, in bf16 (the
        // embedding's unit, at 4 bytes, is smaller); on the host the fp32 master and the bf16
        // shard (the embedding's 1/W at 4 bytes).
        c = tinyOn("h100-80", 2);
        c.runtime.zero_stage = 3;
        c.runtime.offload = "all";
        p = planOnTarget(c, resolveTarget(c));
        QVERIFY(4 * E < 2 * kTinyLargestUnit);
        QCOMPARE(p.weight_element_bytes, int64_t(2));
        QCOMPARE(p.weight_bytes, 2 * kTinyLargestUnit * 2);
        QCOMPARE(p.host_master_bytes, (P + 1) / 2 * 4 + (P + 1) / 2 * 2 + (E + 1) / 2 * 2);
        // The same in fp32 (nothing rounded): fp32 units, the shard is the master.
        c.runtime.dtype = "fp32";
        p = planOnTarget(c, resolveTarget(c));
        QCOMPARE(p.weight_element_bytes, int64_t(4));
        QCOMPARE(p.weight_bytes, 2 * kTinyLargestUnit * 4);
        QCOMPARE(p.host_master_bytes, (P + 1) / 2 * 4);
        QCOMPARE(p.host_moment_bytes, (P + 1) / 2 * 8);
        QCOMPARE(p.ranks_per_node, int64_t(2));
    }

    void gradientSumsMoveToTheHostOnlyWhenTheDeviceCannotKeepThem() {
        RunConfig c = tinyOn("custom", 1);
        c.target.device_memory_gib = 1;
        c.runtime.zero_stage = 2;
        c.runtime.offload = "optimizer";
        const MemoryPlan roomy = planOnTarget(c, resolveTarget(c));
        QVERIFY(!roomy.gradients_on_host);
        QCOMPARE(roomy.gradient_bytes, 4 * kTinyParams);
        // The host still holds their copies, made as the last backward finishes each unit.
        QCOMPARE(roomy.host_gradient_bytes, 4 * kTinyParams);
        // A device one byte short of that peak: the sums go to the host and the rest fits.
        c.target.device_memory_gib = double(roomy.peak_bytes - 1) / kGiB;
        const MemoryPlan tight = planOnTarget(c, resolveTarget(c));
        QVERIFY(tight.gradients_on_host);
        QCOMPARE(tight.gradient_bytes, int64_t(0));
        QCOMPARE(tight.host_gradient_bytes, 4 * kTinyParams);
        QVERIFY(tight.fits_device);
        QCOMPARE(tight.peak_bytes, roomy.peak_bytes - 4 * kTinyParams);
        // Each micro-batch's slice is then added on the host: 12 bytes an element (the sum read
        // and written, the slice read) at the node's host memory bandwidth; none while the
        // device keeps them.
        c.target.host_memory_gbps = 50;  // (a custom device knows none)
        const TargetMachine target = resolveTarget(c);
        QCOMPARE(target.host_memory_gbps, 50.0);
        const StepTimePlan adds = predictStepTime(configOnTarget(c, target), tight, target);
        QVERIFY(near(adds.host_adds_s, 12.0 * double(kTinyParams) / (target.host_memory_gbps * 1e9)));
        QVERIFY(adds.micro_batch_s >= adds.host_adds_s);
        QCOMPARE(predictStepTime(configOnTarget(c, target), roomy, target).host_adds_s, 0.0);
        // Never on CPU ranks: one memory, nothing gained.
        RunConfig cpu = c;
        cpu.target.kind = "here";
        cpu.runtime.memory_limit_mb = 1;
        QVERIFY(!planOnTarget(cpu, resolveTarget(cpu)).gradients_on_host);
    }

    // CPU rank threads' collectives: `probe` times the in-process hub among the config's ranks
    // and the planner's collectives term for "here" divides the ring's bytes by that rate
    // (target.interconnect_gbps), as it does a GPU node's NVLink figure: tiny at stage 1 on two
    // CPU ranks, bytes_sent_per_step / K at 3 GB/s by hand. GPU ranks and a given figure keep
    // theirs; one rank measures nothing.
    void rankThreadsCollectivesTakeTheProbedRate() {
        MachineProbe probe;
        probe.collective_ranks = 2;
        probe.rank_collectives_gbps = 3;
        QCOMPARE(withProbedRates(TargetConfig{}, probe, /*cpu_ranks=*/true, "").interconnect_gbps, 3.0);
        QCOMPARE(withProbedRates(TargetConfig{}, probe, /*cpu_ranks=*/false, "").interconnect_gbps, 0.0);
        TargetConfig given;
        given.interconnect_gbps = 5;
        QCOMPARE(withProbedRates(given, probe, true, "").interconnect_gbps, 5.0);
        RunConfig c = builtinTinyConfig();
        c.runtime.world_size = 2;
        c.runtime.zero_stage = 1;
        c.train.micro_batch_size = 2;
        c.train.gradient_accumulation_steps = 4;
        c.target = withProbedRates(c.target, probe, true, "");
        const TargetMachine here = resolveTarget(c);
        QVERIFY(!here.gpu);
        const MemoryPlan p = planOnTarget(c, here);
        QVERIFY(p.bytes_sent_per_step > 0);
        const StepTimePlan s = predictStepTime(configOnTarget(c, here), p, here);
        QVERIFY(near(s.collectives_s, double(p.bytes_sent_per_step) / 4.0 / 3e9));
        QVERIFY(std::find(s.unknown.begin(), s.unknown.end(), "target.interconnect_gbps") == s.unknown.end());
        // The measurement itself: two rank threads move something; one rank has no collectives.
        const double measured = probeRankThreadCollectives(2, 1 << 20);
        QVERIFY2(measured > 0 && std::isfinite(measured), qPrintable(QString::number(measured)));
        QCOMPARE(probeRankThreadCollectives(1, 1 << 20), 0.0);
    }

    void stepTimeTermByTerm() {
        RunConfig c = tinyOn("h100-80", 1);
        c.runtime.zero_stage = 1;
        c.runtime.offload = "optimizer";
        const TargetMachine t = resolveTarget(c);
        const MemoryPlan p = planOnTarget(c, t);
        const StepTimePlan s = predictStepTime(configOnTarget(c, t), p, t);
        // Per token: 2 FLOPs per weight met (the embedding is a lookup), the scores and the
        // weighted sum of 2 layers x 4 heads x (24 + 16) over (64 + 1) / 2 positions on average;
        // x3 for forward and backward; 8 x 64 tokens a micro-batch.
        const double per_token = 3.0 * (2.0 * double(kTinyActivated - 64 * 64) + 2.0 * 2 * 4 * 40 * 32.5);
        QVERIFY(near(s.flops_per_micro_batch, per_token * 512));
        const double compute = per_token * 512 / (989e12 * 0.4);
        QVERIFY(near(s.compute_s, compute));
        QCOMPARE(s.collectives_s, 0.0);  // one device
        const double P = double(kTinyParams);
        QVERIFY(near(s.optimizer_s, P * 28 / 200e9));  // 28 bytes touched a parameter
        QVERIFY(near(s.gradients_down_s, 4 * P / 50e9));
        QVERIFY(near(s.weights_up_s, 4 * P / 50e9));
        // Stage 1: the gradients come down after the window, beside the CPU step, and land in the
        // host memory the step reads: 28 + 4 bytes an element through its 200 GB/s.
        QVERIFY(near(s.tail_host_memory_s, P * 32 / 200e9));
        const double step = 2 * compute + std::max({P * 28 / 200e9, 4 * P / 50e9, P * 32 / 200e9}) + 4 * P / 50e9;
        QVERIFY(near(s.step_s, step));
        // Stage 2: during the last backward (each unit's sum as it is finished).
        RunConfig stage2 = c;
        stage2.runtime.zero_stage = 2;
        const StepTimePlan s2 = predictStepTime(configOnTarget(stage2, t), planOnTarget(stage2, t), t);
        QVERIFY(near(s2.step_s, compute + std::max(compute, 4 * P / 50e9) + P * 28 / 200e9 + 4 * P / 50e9));
        QVERIFY(s.unknown.empty());
        QVERIFY(!s.bound.empty());

        // Recomputing whole blocks runs their forward once more.
        RunConfig full = c;
        full.runtime.activation_checkpointing = "full";
        const StepTimePlan r = predictStepTime(configOnTarget(full, t), planOnTarget(full, t), t);
        const double head = 2.0 * 64 * 64;
        QVERIFY(near(r.flops_per_micro_batch, (per_token + (per_token / 3.0 - head)) * 512));

        // The NVMe tier: moments and master read and written, pipelined with the CPU step.
        c.runtime.offload_dir = kPlannedOffloadDir;
        const StepTimePlan n = predictStepTime(configOnTarget(c, t), planOnTarget(c, t), t);
        QVERIFY(near(n.nvme_step_s, 12 * P / 56e9 + 12 * P / 40e9));

        // Across nodes the collectives take the network's rate.
        RunConfig wide = tinyOn("h100-80", 16);
        wide.train.global_batch_size = std::nullopt;
        const TargetMachine w = resolveTarget(wide);
        const MemoryPlan wp = planOnTarget(wide, w);
        const StepTimePlan ws = predictStepTime(configOnTarget(wide, w), wp, w);
        QVERIFY(near(ws.collectives_s, double(wp.bytes_sent_per_step) / 2 / 50e9));

        // This machine knows no rate: the terms that need one are named, not guessed.
        RunConfig here = builtinTinyConfig();
        here.runtime.zero_stage = 1;
        here.runtime.offload = "optimizer";
        const TargetMachine h = resolveTarget(here);
        const StepTimePlan u = predictStepTime(configOnTarget(here, h), planOnTarget(here, h), h);
        QVERIFY(std::find(u.unknown.begin(), u.unknown.end(), "target.compute_tflops") != u.unknown.end());
        QVERIFY(std::find(u.unknown.begin(), u.unknown.end(), "target.host_memory_gbps") != u.unknown.end());
        QVERIFY(describeStepTime(u).find("probe") != std::string::npos);
    }

    // PCIe is full duplex ("per device and direction"): under offload all with the gradient sums
    // kept on the host, the bf16 shard goes up twice a micro-batch (2 x 2 bytes an element)
    // while each micro-batch's fp32 slice comes down (4 bytes), each direction at the link's
    // 50 GB/s: the longer direction paces the micro-batch, not the two together.
    void pcieCarriesBothDirectionsAtOnce() {
        RunConfig c = tinyOffloadingAll(1);
        const MemoryPlan roomy = planOnTarget(c, resolveTarget(c));
        QCOMPARE(roomy.weight_element_bytes, int64_t(2));  // bf16 device weights beside the host's master
        c.target.device_memory_gib = double(roomy.peak_bytes - 1) / kGiB;
        const TargetMachine t = resolveTarget(c);
        const MemoryPlan tight = planOnTarget(c, t);
        QVERIFY(tight.gradients_on_host);
        const double P = double(kTinyParams);
        QCOMPARE(tight.slice_elements, kTinyParams);  // one rank: its slice is every parameter
        const StepTimePlan s = predictStepTime(configOnTarget(c, t), tight, t);
        QVERIFY(near(s.pcie_up_s, 2 * 2 * P / 50e9));
        QVERIFY(near(s.pcie_down_s, 4 * P / 50e9));
        QVERIFY(near(s.pcie_s, 4 * P / 50e9));  // not 8 P / 50e9: the two directions overlap
        // Host memory takes the shard's 4 bytes up, the slice's 4 down and the additions' 12:
        // 20 bytes an element at 200 GB/s, longer than PCIe's 4 at 50.
        QVERIFY(near(s.host_memory_s, 20 * P / 200e9));
        QVERIFY(near(s.micro_batch_s, std::max(s.compute_s, 20 * P / 200e9)));
    }

    // Under fp8 on a GPU the device keeps the linear layers' weights in bf16 as under bf16 (the fp8
    // products quantise them from there): the shard goes up twice a micro-batch at 2 bytes an
    // element, not fp32's 4, so fp8 moves what bf16 moves and computes at fp8's rate: its step
    // is no longer than bf16's (it was longer, with fp32 weights over PCIe).
    void fp8MovesTheWeightsInBf16() {
        RunConfig c = tinyOffloadingAll(1);
        c.runtime.dtype = "fp8";
        const MemoryPlan roomy = planOnTarget(c, resolveTarget(c));
        QVERIFY(roomy.placement.bf16_device_weights);
        QCOMPARE(roomy.weight_element_bytes, int64_t(2));
        c.target.device_memory_gib = double(roomy.peak_bytes - 1) / kGiB;
        const TargetMachine t = resolveTarget(c);
        const MemoryPlan tight = planOnTarget(c, t);
        QVERIFY(tight.gradients_on_host);
        const StepTimePlan s = predictStepTime(configOnTarget(c, t), tight, t);
        const double P = double(kTinyParams);
        QVERIFY(near(s.pcie_up_s, 2 * 2 * P / 50e9));
        QVERIFY(near(s.pcie_down_s, 4 * P / 50e9));  // the gradients' slices stay fp32

        RunConfig c16 = publishedOnH100s("config_16B.json", 8, 1);
        c16.runtime.zero_stage = 3;
        c16.runtime.offload = "all";
        c16.runtime.activation_checkpointing = "full";
        auto stepOf = [&](const char* dtype) {
            RunConfig d = c16;
            d.runtime.dtype = dtype;
            const TargetMachine h100 = resolveTarget(d);  // its peak in the dtype's products
            const RunConfig placed = configOnTarget(d, h100);
            const MemoryPlan p = planOnTarget(d, h100);
            return std::pair{p, predictStepTime(placed, p, h100)};
        };
        const auto [plan8, step8] = stepOf("fp8");
        const auto [plan16, step16] = stepOf("bf16");
        QVERIFY(plan8.fits && plan16.fits);
        QCOMPARE(plan8.weight_element_bytes, int64_t(2));
        QVERIFY(near(step8.pcie_up_s, step16.pcie_up_s));
        QVERIFY(step8.compute_s < step16.compute_s);
        QVERIFY2(step8.step_s <= step16.step_s, qPrintable(QString("fp8 %1 s, bf16 %2 s").arg(step8.step_s).arg(step16.step_s)));
    }

    // The node's host memory is one budget: its eight GPUs' shards all come up through it. Under
    // offload all on 8 H100s each rank's bf16 slice goes up twice a micro-batch (4 bytes an
    // element of its slice over its own PCIe link at 50 GB/s), but the node reads 8 x that from
    // host memory at 200 GB/s: host memory, not PCIe, paces the micro-batch.
    void theNodesHostMemoryIsShared() {
        RunConfig c = tinyOffloadingAll(8);
        const TargetMachine t = resolveTarget(c);
        const MemoryPlan p = planOnTarget(c, t);
        QVERIFY(!p.gradients_on_host);
        QCOMPARE(p.ranks_per_node, int64_t(8));
        QCOMPARE(p.weight_element_bytes, int64_t(2));
        const double slice = double((kTinyParams + 7) / 8);
        QCOMPARE(p.slice_elements, (kTinyParams + 7) / 8);
        const StepTimePlan s = predictStepTime(configOnTarget(c, t), p, t);
        QVERIFY(near(s.pcie_up_s, 4 * slice / 50e9));
        QVERIFY(near(s.host_memory_s, 8 * 4 * slice / 200e9));
        QVERIFY(s.host_memory_s > s.pcie_s);
        QVERIFY(near(s.micro_batch_s, std::max({s.compute_s, s.collectives_s, 8 * 4 * slice / 200e9})));
    }

    // Stage 3's gathers move the weights in their device dtype: under offload on a GPU in bf16 the
    // linear layers' 2 bytes an element (the embedding, vocab 64 x dim 64, stays fp32), twice a
    // micro-batch (the embedding's backward gathers nothing); the gradients' reduce-scatter stays
    // fp32. Each rank sends (W - 1) / W of every collective.
    void stage3GathersMoveTheDeviceDtype() {
        RunConfig c = tinyOffloadingAll(2);
        const TargetMachine t = resolveTarget(c);
        const double P = double(kTinyParams), E = 64.0 * 64.0;
        const MemoryPlan bf16 = planOnTarget(c, t);
        QCOMPARE(bf16.weight_element_bytes, int64_t(2));
        const double K = double(bf16.gradient_accumulation_steps);
        const double gather = (P - E) * 2 + E * 4;
        QCOMPARE(double(bf16.bytes_sent_per_step), std::floor(K * 0.5 * (gather + (gather - E * 4) + P * 4)));
        c.runtime.dtype = "fp32";
        const MemoryPlan fp32 = planOnTarget(c, t);
        QCOMPARE(fp32.weight_element_bytes, int64_t(4));
        QCOMPARE(double(fp32.bytes_sent_per_step), std::floor(double(fp32.gradient_accumulation_steps) * 0.5 * (12 * P - 4 * E)));
    }

    // bf16 AdamW moments halve the moments' bytes and nothing else: the gradients still come
    // down in fp32 and the master goes up in fp32, an element at a time (the slice counted in
    // elements, not from the moments' bytes); the CPU step touches 4 + 2 x 2 x 2 + 8 = 20 bytes
    // an element instead of 4 + 2 x 2 x 4 + 8 = 28; NVMe reads and writes the moments in bf16
    // beside the fp32 master: 2 x 2 + 4 = 8 bytes an element instead of 12.
    void bf16MomentsChangeOnlyTheMomentsBytes() {
        QCOMPARE(cpuAdamWBytesPerParameter(4, 4), int64_t(28));
        QCOMPARE(cpuAdamWBytesPerParameter(4, 2), int64_t(20));
        QCOMPARE(cpuAdamWBytesPerParameter(2, 4), int64_t(30));
        QCOMPARE(cpuAdamWBytesPerParameter(2, 2), int64_t(22));
        RunConfig c = tinyOn("h100-80", 1);
        c.runtime.zero_stage = 1;
        c.runtime.offload = "optimizer";
        const TargetMachine t = resolveTarget(c);
        const double P = double(kTinyParams);
        for (const char* dtype : {"fp32", "bf16"}) {
            c.runtime.optimizer_dtype = dtype;
            c.runtime.offload_dir = "";
            const StepTimePlan s = predictStepTime(configOnTarget(c, t), planOnTarget(c, t), t);
            const bool bf16 = std::string(dtype) == "bf16";
            QVERIFY(near(s.gradients_down_s, 4 * P / 50e9));
            QVERIFY(near(s.weights_up_s, 4 * P / 50e9));
            QVERIFY(near(s.optimizer_s, P * (bf16 ? 20 : 28) / 200e9));
            // A kernel slower than the host memory's bound (target.cpu_adamw_gparams, what probe
            // measures): its rate paces the step; a faster one leaves the bandwidth's.
            auto adamWAt = [&](double gparams) {
                RunConfig paced = c;
                paced.target.cpu_adamw_gparams = gparams;
                const TargetMachine tp = resolveTarget(paced);
                return predictStepTime(configOnTarget(paced, tp), planOnTarget(paced, tp), tp).optimizer_s;
            };
            QVERIFY(near(adamWAt(1e-6), P / 1e3));  // a thousand parameters a second
            QVERIFY(near(adamWAt(1e6), P * (bf16 ? 20 : 28) / 200e9));
            c.runtime.offload_dir = kPlannedOffloadDir;
            const StepTimePlan n = predictStepTime(configOnTarget(c, t), planOnTarget(c, t), t);
            const double moved = P * (bf16 ? 8 : 12);
            QVERIFY(near(n.nvme_step_s, moved / 56e9 + moved / 40e9));
        }
    }

    // The guides' claims: 16B on one 80 GB GPU, 236B on four, 671B on eight.
    void thePublishedConfigsOnTheGuidesMachines() {
        RunConfig c16 = publishedOnH100s("config_16B.json", 8, 1);
        TargetMachine t = resolveTarget(c16);
        // Without offload: nothing fits one device (16B's state alone is 16 bytes a parameter).
        RunConfig plain = c16;
        QVERIFY(adviseLayout(configOnTarget(plain, t), t.device_memory_bytes).cheapest.micro_batch_size == 0);
        TargetAdvice a = adviseOnTarget(c16, t);
        QVERIFY(a.offloaded);
        QVERIFY(a.layout.cheapest.micro_batch_size >= 1);
        QVERIFY(a.layout.cheapest_plan.fits);
        QVERIFY(a.layout.cheapest_plan.peak_bytes <= t.device_memory_bytes * (1.0 - kLayoutSafetyMargin));
        QVERIFY(a.why_none.empty());

        RunConfig c236 = publishedOnH100s("config_236B.json", 32, 4);
        t = resolveTarget(c236);
        a = adviseOnTarget(c236, t);
        QVERIFY(a.offloaded);
        QCOMPARE(a.layout.cheapest.offload, std::string("all"));  // 236B's bf16 weights exceed four devices
        QVERIFY(a.layout.cheapest.nvme);                         // its optimizer state a node's host memory
        QVERIFY(a.layout.cheapest_plan.fits_host && a.layout.cheapest_plan.fits_nvme);

        // 671B on eight: the fp32 gradient sums alone (4 bytes a parameter) exceed a DGX's 2 TB.
        RunConfig c671 = publishedOnH100s("config_671B.json", 32, 8);
        t = resolveTarget(c671);
        a = adviseOnTarget(c671, t);
        QVERIFY(!a.offloaded);
        QCOMPARE(a.layout.cheapest.micro_batch_size, int64_t(0));
        QVERIFY2(a.why_none.find("host memory") != std::string::npos, a.why_none.c_str());
        QVERIFY2(a.why_none.find("gradient sums") != std::string::npos, a.why_none.c_str());
        // ... and with 4 TiB of host memory a layout is found.
        c671.target.host_memory_gib = 4096;
        a = adviseOnTarget(c671, resolveTarget(c671));
        QVERIFY2(a.offloaded, a.why_none.c_str());
        // On the 2 TB node under window_schedule auto: the unit order writes each unit's finished
        // sums to NVMe, and it fits (the 16 bytes a parameter of master, moments and sums there,
        // with the bf16 shard's 2).
        c671.target.host_memory_gib = 0;
        c671.runtime.window_schedule = "auto";
        t = resolveTarget(c671);
        a = adviseOnTarget(c671, t);
        QVERIFY2(a.offloaded, a.why_none.c_str());
        const MemoryPlan& fitted = a.layout.cheapest_plan;
        QVERIFY(fitted.placement.unit_order);
        QVERIFY(fitted.gradients_in_file);
        QCOMPARE(fitted.placement.gradient_sums, Tier::File);
        QVERIFY(double(fitted.host_bytes * fitted.ranks_per_node) <= 2048 * kGiB);
        const double params = double(countParameters(c671.model).total);
        QVERIFY(near(double(fitted.nvme_bytes * fitted.ranks_per_node), 18 * params, 0.01));
    }

    // runtime.gradient_sum_dtype bf16 halves the slice sums wherever they wait, and nothing else
    // (at stages 0 and 1, which keep none, nothing at all): tiny under offload all on one H100 (stage 3, one rank: its slice is all P), by hand. On the
    // device: 2P there and their copies 2P on the host, coming down at 2 bytes an element, the
    // CPU step reading 2 instead of 4 (2 + 2 x 2 x 4 + 8 + 2 = 28 bytes an element). Summed on
    // the host (the device one byte short): the reduced slices still come down in fp32 (4P a
    // micro-batch), the additions read and write 2-byte sums (4 + 2 x 2 = 8 bytes an element, not
    // 12). In offload_dir's file (the unit order): 2P there, the unit being summed 2 bytes an
    // element on the device, a window's writes 2P / K a micro-batch.
    void bf16GradientSumsHalveTheSumsInEveryTier() {
        QCOMPARE(cpuAdamWBytesPerParameter(2, 4, 2), int64_t(28));
        QCOMPARE(cpuAdamWBytesPerParameter(4, 2, 2), int64_t(18));
        const double P = double(kTinyParams);
        // Stages 0 and 1 keep no slice sums: their fp32 gradient buffers stay as they were.
        for (int64_t stage : {0, 1}) {
            RunConfig plain = tinyOn("h100-80", 1);
            plain.runtime.zero_stage = stage;
            plain.runtime.gradient_sum_dtype = "bf16";
            const MemoryPlan p = planOnTarget(plain, resolveTarget(plain));
            QCOMPARE(p.gradient_sum_element_bytes, int64_t(4));
            QCOMPARE(double(p.gradient_bytes), 4 * P);
        }
        RunConfig c = tinyOffloadingAll(1);
        c.runtime.gradient_sum_dtype = "bf16";
        const TargetMachine roomy_machine = resolveTarget(c);
        const MemoryPlan roomy = planOnTarget(c, roomy_machine);
        QVERIFY(!roomy.gradients_on_host && !roomy.gradients_in_file);
        QCOMPARE(roomy.gradient_sum_element_bytes, int64_t(2));
        QCOMPARE(double(roomy.gradient_bytes), 2 * P);
        QCOMPARE(double(roomy.host_gradient_bytes), 2 * P);
        const StepTimePlan r = predictStepTime(configOnTarget(c, roomy_machine), roomy, roomy_machine);
        QVERIFY(near(r.gradients_down_s, 2 * P / 50e9));
        QVERIFY(near(r.optimizer_s, 28 * P / 200e9));
        QVERIFY(near(r.to_host_bytes, 2 * P));

        RunConfig tight_config = c;
        tight_config.target.device_memory_gib = double(roomy.peak_bytes - 1) / kGiB;
        const TargetMachine t = resolveTarget(tight_config);
        const MemoryPlan tight = planOnTarget(tight_config, t);
        QVERIFY(tight.gradients_on_host);
        QCOMPARE(double(tight.host_gradient_bytes), 2 * P);
        const StepTimePlan s = predictStepTime(configOnTarget(tight_config, t), tight, t);
        QVERIFY(near(s.pcie_down_s, 4 * P / 50e9));
        // the bf16 shard up twice (4), the fp32 slice down (4), the additions (8)
        QVERIFY(near(s.host_memory_s, 16 * P / 200e9));
        QVERIFY(near(s.host_adds_s, 8 * P / 200e9));
        QVERIFY(near(s.to_host_bytes, 4 * P * double(tight.gradient_accumulation_steps)));

        RunConfig unit = c;
        unit.runtime.activation_checkpointing = "full";
        unit.runtime.window_schedule = "unit";
        unit.runtime.offload_dir = kPlannedOffloadDir;
        unit.model.n_layers = 8;
        const double P8 = 2 * 64 * 64 + 64 + 40640 + 7 * 71880;
        const MemoryPlan plain = planOnTarget(unit, resolveTarget(unit));
        QVERIFY(!plain.gradients_in_file);
        unit.target.host_memory_gib = double(plain.host_bytes - 1) / kGiB;
        const TargetMachine ut = resolveTarget(unit);
        const MemoryPlan file = planOnTarget(unit, ut);
        QVERIFY(file.gradients_in_file);
        QCOMPARE(double(file.nvme_gradient_bytes), 2 * P8);
        QCOMPARE(file.gradient_bytes, kTinyLargestUnit * 2);
        const StepTimePlan f = predictStepTime(configOnTarget(unit, ut), file, ut);
        QVERIFY(near(f.nvme_write_s, 2 * P8 / double(file.gradient_accumulation_steps) / 40e9));
        const double read = double(file.nvme_bytes);
        QVERIFY(near(f.nvme_step_s, read / 56e9 + (read - 2 * P8) / 40e9));
    }

    // With every rate known the advice is the fastest predicted layout that fits, not the first
    // in the cost order: config_16B on 16 H100s fits at stage 3 without recomputation, first in
    // that order, but gathers every unit twice a micro-batch; no layout that fits is faster than
    // the one advised.
    void theAdviceOnAKnownMachineIsTheFastestThatFits() {
        RunConfig c = publishedOnH100s("config_16B.json", 8, 16);
        const TargetMachine t = resolveTarget(c);
        const RunConfig placed = configOnTarget(c, t);
        const TargetAdvice a = adviseOnTarget(c, t);
        QVERIFY(!a.offloaded);
        const double advised = predictStepTime(withLayout(placed, a.layout.cheapest), a.layout.cheapest_plan, t).step_s;
        const LayoutAdvice first = adviseLayout(placed, t.device_memory_bytes);
        const double in_order = predictStepTime(withLayout(placed, first.cheapest), first.cheapest_plan, t).step_s;
        QVERIFY2(advised < in_order, qPrintable(QString("advised %1 s, cost order's %2 s").arg(advised).arg(in_order)));
        const int64_t usable = static_cast<int64_t>(double(t.device_memory_bytes) * (1.0 - kLayoutSafetyMargin));
        for (MemoryLayout layout : layoutsByCost(placed)) {
            const MemoryPlan p = planMemory(withLayout(placed, layout), usable);
            if (p.largest_fitting_micro_batch < 1) continue;
            layout.micro_batch_size = p.largest_fitting_micro_batch;
            const RunConfig there = withLayout(placed, layout);
            const double step = predictStepTime(there, planMemory(there, usable), t).step_s;
            QVERIFY2(step >= advised, qPrintable(QString("stage %1 EP %2 %3: %4 s < advised %5 s").arg(layout.zero_stage)
                                                     .arg(layout.expert_parallel).arg(layout.activation_checkpointing.c_str())
                                                     .arg(step).arg(advised)));
        }
    }

    void theTargetSectionIsValidated() {
        auto pathsOf = [](const RunConfig& c) {
            QStringList paths;
            for (const ConfigIssue& issue : validateRunConfig(c)) paths << QString::fromStdString(issue.path);
            return paths;
        };
        RunConfig c = builtinTinyConfig();
        QVERIFY(pathsOf(c).isEmpty());
        c.target.kind = "h100";
        QVERIFY(pathsOf(c).contains("target.kind"));
        c.target.kind = "custom";
        QVERIFY(pathsOf(c).contains("target.device_memory_gib"));
        c.target.device_memory_gib = 24;
        QVERIFY(pathsOf(c).isEmpty());
        c.target.mfu = 0;
        QVERIFY(pathsOf(c).contains("target.mfu"));
        c.target.mfu = 0.4;
        c.target.pcie_gbps = -1;
        QVERIFY(pathsOf(c).contains("target.pcie_gbps"));
        c.target.pcie_gbps = 1e9;
        QVERIFY(pathsOf(c).contains("target.pcie_gbps"));
        c.target.pcie_gbps = 0;
        c.target.devices = int64_t(1) << 21;
        QVERIFY(pathsOf(c).contains("target.devices"));
        c.target.devices = 0;
        // offload all shards the weights: stage 3 only.
        c.runtime.offload = "all";
        c.runtime.zero_stage = 1;
        QVERIFY(pathsOf(c).contains("runtime.offload"));
        c.runtime.zero_stage = 3;
        QVERIFY(!pathsOf(c).contains("runtime.offload"));
        // The section reads and writes as JSON with the rest.
        RunConfig named = builtinTinyConfig();
        named.target.kind = "b200-180";
        named.target.devices = 8;
        const RunConfig back = parseRunConfig(runConfigToJson(named), "test");
        QCOMPARE(back.target.kind, std::string("b200-180"));
        QCOMPARE(back.target.devices, int64_t(8));
    }
};

QTEST_GUILESS_MAIN(TestTargetPlan)
#include "test_target_plan.moc"
