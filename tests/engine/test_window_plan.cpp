// The planner under runtime.window_schedule: the unit order's terms counted by hand (the shard
// once a window, the boundaries on the device, in host memory or in offload_dir, the gradient
// sums' host and NVMe tiers once a window) and "auto" taking the faster order.
#include <QtTest/QtTest>

#include <tuple>

#include "trainbench/memory_plan.h"
#include "trainbench/param_count.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

#include "target_plan_setup.h"

using namespace trainbench;

class TestWindowPlan : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // runtime.window_schedule unit: the shard crosses PCIe twice a window, not twice a
    // micro-batch (a micro-batch's share is 1/K), and the window keeps every block's input per
    // micro-batch: ((K - 1)(L + 1) + K) tensors of m x T x d fp32 beyond one micro-batch's
    // activations, on the device while they fit, else in host memory (every micro-batch's inputs
    // and the gradient handed down, K x (L + 2), two on the device), whence they cross PCIe down
    // when made (2L + 2 a micro-batch: L + 1 inputs, L + 1 gradients) and up for each use
    // (3L + 2: each block's input for its forward and its backward, the head's once, the
    // gradient for each block's backward and the embedding's). "auto" takes unit where the
    // weights are streamed and blocks recomputed.
    void unitOrderStreamsTheShardOnceAWindow() {
        RunConfig c = tinyOffloadingAll(8);
        c.runtime.activation_checkpointing = "full";
        const TargetMachine t = resolveTarget(c);
        const MemoryPlan micro = planOnTarget(c, t);
        QVERIFY(!micro.placement.unit_order);
        QCOMPARE(micro.boundary_bytes, int64_t(0));
        c.runtime.window_schedule = "unit";
        const MemoryPlan unit = planOnTarget(c, t);
        QVERIFY(unit.placement.unit_order);
        QCOMPARE(unit.placement.boundaries, Tier::Device);
        const int64_t K = 2, L = 2, m = 8, T = c.train.seq_len, d = 64;
        QCOMPARE(unit.gradient_accumulation_steps, K);
        const int64_t boundary = m * T * d * 4;
        QCOMPARE(unit.boundary_bytes, ((K - 1) * (L + 1) + K) * boundary);
        QCOMPARE(unit.device_boundary_bytes, unit.boundary_bytes);
        QCOMPARE(unit.peak_bytes, micro.peak_bytes + unit.boundary_bytes);
        const StepTimePlan sm = predictStepTime(configOnTarget(c, t), micro, t);
        const StepTimePlan su = predictStepTime(configOnTarget(c, t), unit, t);
        const double slice = double((kTinyParams + 7) / 8);
        QVERIFY(near(sm.pcie_up_s, 4 * slice / 50e9));
        QVERIFY(near(su.pcie_up_s, 4 * slice / 50e9 / double(K)));
        QVERIFY(near(su.host_memory_s, 8 * 4 * slice / 200e9 / double(K)));
        QVERIFY(near(su.compute_s, sm.compute_s));  // the same recomputation either way
        // A device short of the boundaries: they wait in host memory and cross PCIe.
        c.target.device_memory_gib = double(unit.peak_bytes - 1) / kGiB;
        const TargetMachine tight = resolveTarget(c);
        const MemoryPlan off = planOnTarget(c, tight);
        QCOMPARE(off.placement.boundaries, Tier::Host);
        QVERIFY(!off.gradients_on_host);
        QCOMPARE(off.host_boundary_bytes, K * (L + 2) * boundary);
        QCOMPARE(off.device_boundary_bytes, 2 * boundary);
        QCOMPARE(off.peak_bytes, micro.peak_bytes + 2 * boundary);
        const StepTimePlan so = predictStepTime(configOnTarget(c, tight), off, tight);
        const double down = double((2 * L + 2) * boundary), up = double((3 * L + 2) * boundary);
        QVERIFY(near(so.pcie_up_s, (4 * slice / double(K) + up) / 50e9));
        QVERIFY(near(so.pcie_down_s, down / 50e9));
        QVERIFY(near(so.host_memory_s, 8 * (4 * slice / double(K) + up + down) / 200e9));
        // auto: unit where the weights are streamed, micro_batch where they stay on the device.
        c.target.device_memory_gib = 0;
        c.runtime.window_schedule = "auto";
        QVERIFY(planOnTarget(c, t).placement.unit_order);
        c.runtime.offload = "optimizer";
        QVERIFY(!planOnTarget(c, t).placement.unit_order);
    }

    // The unit order's boundaries in offload_dir where host memory cannot keep them either:
    // every micro-batch's inputs and handed-down gradient, K x (L + 2), in the file, three in host
    // memory (BoundaryFile's two write buffers and its read buffer), two on the device. Each is
    // written once (2L + 2 a micro-batch: PCIe down, then the drives' writes) and read at each use
    // (3L + 2: the drives' reads, then PCIe up), by hand; the state's NVMe bytes are as before.
    void boundariesWaitInOffloadDirWhereHostMemoryCannotKeepThem() {
        RunConfig c = tinyOffloadingAll(8);
        c.runtime.activation_checkpointing = "full";
        c.runtime.window_schedule = "unit";
        c.runtime.offload_dir = kPlannedOffloadDir;
        const MemoryPlan roomy = planOnTarget(c, resolveTarget(c));
        QCOMPARE(roomy.placement.boundaries, Tier::Device);
        c.target.device_memory_gib = double(roomy.peak_bytes - 1) / kGiB;
        const TargetMachine host_tight = resolveTarget(c);
        const MemoryPlan host = planOnTarget(c, host_tight);
        QCOMPARE(host.placement.boundaries, Tier::Host);
        c.target.host_memory_gib = double((host.host_bytes - 1) * host.ranks_per_node) / kGiB;
        const TargetMachine t = resolveTarget(c);
        const MemoryPlan p = planOnTarget(c, t);
        QCOMPARE(p.placement.boundaries, Tier::File);
        QVERIFY(p.fits);
        const int64_t K = 2, L = 2, m = 8, T = c.train.seq_len, d = 64, W = 8;
        const int64_t b = m * T * d * 4;
        QCOMPARE(p.gradient_accumulation_steps, K);
        QCOMPARE(p.nvme_boundary_bytes, K * (L + 2) * b);
        QCOMPARE(p.device_boundary_bytes, 2 * b);
        QCOMPARE(p.host_boundary_bytes, 3 * b);
        QCOMPARE(p.host_bytes, host.host_bytes - host.host_boundary_bytes + 3 * b);
        QCOMPARE(p.nvme_bytes, host.nvme_bytes + K * (L + 2) * b);
        QCOMPARE(p.peak_bytes, host.peak_bytes);
        const StepTimePlan s = predictStepTime(configOnTarget(c, t), p, t);
        const StepTimePlan sh = predictStepTime(configOnTarget(c, host_tight), host, host_tight);
        const double slice = double((kTinyParams + 7) / 8), we = double(p.weight_element_bytes);
        const double down = double((2 * L + 2) * b), up = double((3 * L + 2) * b);
        QVERIFY(near(s.pcie_up_s, (2 * we * slice / double(K) + up) / 50e9));
        QVERIFY(near(s.pcie_down_s, down / 50e9));
        QVERIFY(near(s.nvme_read_s, 8 * (2 * slice * we / double(K) + up) / 56e9));
        QVERIFY(near(s.nvme_write_s, 8 * down / 40e9));
        QVERIFY(near(s.nvme_read_bytes - sh.nvme_read_bytes, double(W * K) * up));
        QVERIFY(near(s.nvme_write_bytes - sh.nvme_write_bytes, double(W * K) * down));
        QVERIFY(near(s.to_device_bytes, sh.to_device_bytes));  // through PCIe either way
        QVERIFY(near(s.nvme_step_s, sh.nvme_step_s));          // the step's state alone
        // Without offload_dir the boundaries have nowhere to go: the plan does not fit.
        c.runtime.offload_dir = "";
        const MemoryPlan nowhere = planOnTarget(c, resolveTarget(c));
        QVERIFY(nowhere.placement.boundaries != Tier::File);
    }

    // The gradient sums in offload_dir (the unit order, where host memory cannot keep them):
    // tiny with 8 blocks (7 MoE) on one H100 with its host memory short of the sums, by hand.
    // The rank's slice of P = 2 x 64 x 64 + 64 + 40,640 + 7 x 71,880: its fp32 sums 4P on NVMe beside master 4P, moments 8P and the bf16 shard's
    // 2(P - E) + 4E (E the embedding's 64 x 64, kept fp32); the device keeps one unit's sums (the
    // largest's 4 x 71,872 bytes); a window writes them once (a micro-batch's share 4P / K at 40
    // GB/s, and the host memory they leave from), the step reads them with the rest and writes
    // back all but them.
    void gradientSumsWaitInOffloadDirUnderTheUnitOrder() {
        RunConfig c = tinyOffloadingAll(1);
        c.runtime.activation_checkpointing = "full";
        c.runtime.window_schedule = "unit";
        c.runtime.offload_dir = kPlannedOffloadDir;
        c.model.n_layers = 8;  // units enough that two staging slots of the largest take less than the sums
        const double P = 2 * 64 * 64 + 64 + 40640 + 7 * 71880, E = 64.0 * 64.0;
        QCOMPARE(double(countParameters(c.model).total), P);
        const TargetMachine roomy = resolveTarget(c);
        const MemoryPlan plain = planOnTarget(c, roomy);
        QVERIFY(!plain.gradients_in_file);
        // Host memory one byte short of the sums' copies beside the rest.
        c.target.host_memory_gib = double(plain.host_bytes - 1) / kGiB;
        const TargetMachine t = resolveTarget(c);
        const MemoryPlan p = planOnTarget(c, t);
        QVERIFY(p.gradients_in_file);
        QCOMPARE(p.placement.gradient_sums, Tier::File);
        QVERIFY(p.fits);
        QCOMPARE(double(p.nvme_gradient_bytes), 4 * P);
        QCOMPARE(double(p.nvme_bytes), 4 * P + 8 * P + 4 * P + (2 * (P - E) + 4 * E));
        QCOMPARE(p.gradient_bytes, kTinyLargestUnit * 4);
        QCOMPARE(p.host_gradient_bytes, int64_t(0));
        const double K = double(p.gradient_accumulation_steps);
        const StepTimePlan s = predictStepTime(configOnTarget(c, t), p, t);
        QVERIFY(near(s.nvme_write_s, 4 * P / K / 40e9));
        const double read = double(p.nvme_bytes), written = read - 4 * P;
        QVERIFY(near(s.nvme_step_s, read / 56e9 + written / 40e9));
        // Under micro_batch no unit's sums are finished before the window's end: no file tier.
        c.runtime.window_schedule = "micro_batch";
        QVERIFY(!planOnTarget(c, t).gradients_in_file);
    }

    // window_schedule auto takes the faster order, each at its own largest micro-batch: config_236B
    // on one H100 fits m 2 within the advice's margin only under the micro-batch order (the unit
    // order keeps one MoE block's fp32 sums, 15 GiB, on the device), but the unit order at m 1 is
    // the faster step (no slices
    // added on the host every micro-batch); the advice is that, and the same config run under
    // auto at m 1 takes the unit order (it fits there), so the advice names what will run.
    void autoTakesTheFasterOrderAtItsOwnMicroBatch() {
        RunConfig c = publishedOnH100s("config_236B.json", 64, 1);
        const TargetMachine t = resolveTarget(c);
        auto advised = [&](const char* schedule) {
            RunConfig own = c;
            own.runtime.window_schedule = schedule;
            const TargetAdvice a = adviseOnTarget(own, t);
            const RunConfig placed = withLayout(configOnTarget(own, t), a.layout.cheapest);
            return std::tuple{a, placed, predictStepTime(placed, a.layout.cheapest_plan, t).step_s};
        };
        const auto [micro, micro_config, micro_step] = advised("micro_batch");
        const auto [automatic, auto_config, auto_step] = advised("auto");
        QVERIFY(micro.offloaded && automatic.offloaded);
        QCOMPARE(micro.layout.cheapest.micro_batch_size, int64_t(2));
        QVERIFY(!micro.layout.cheapest_plan.placement.unit_order);
        qInfo("auto: m %lld, %s order, %.1f s; micro_batch: m %lld, %.1f s", (long long)automatic.layout.cheapest.micro_batch_size,
              automatic.layout.cheapest_plan.placement.unit_order ? "unit" : "micro-batch", auto_step,
              (long long)micro.layout.cheapest.micro_batch_size, micro_step);
        QCOMPARE(automatic.layout.cheapest.micro_batch_size, int64_t(1));
        QVERIFY(automatic.layout.cheapest_plan.placement.unit_order);
        QVERIFY2(auto_step < micro_step, qPrintable(QString("auto %1 s, micro_batch %2 s").arg(auto_step).arg(micro_step)));
        QVERIFY(planOnTarget(auto_config, t).placement.unit_order);
    }

    // The unit order's host tier: each unit's finished sums come down once a window, none added on
    // the host. Tiny under offload all on one H100 with the device one byte short of the sums
    // (and of the unit order's boundaries, which leave first):
    // under micro_batch the fp32 slice comes down every micro-batch (4P at 50 GB/s) and is added
    // (12P of host memory); under unit the sums come down once (4P / K a micro-batch), no
    // additions, and the device keeps the largest unit's sums (4 x 71,872 bytes); the unit order's
    // boundaries come down beside them (2L + 2 of [m, T, d] fp32 a micro-batch: inputs and gradients).
    void theUnitOrderBringsTheHostSumsDownOnce() {
        const double P = double(kTinyParams);
        for (const char* schedule : {"micro_batch", "unit"}) {
            RunConfig c = tinyOffloadingAll(1);
            c.runtime.activation_checkpointing = "full";
            c.runtime.window_schedule = schedule;
            const MemoryPlan roomy = planOnTarget(c, resolveTarget(c));
            // (the unit order's boundary activations go to the host first: short of them too)
            c.target.device_memory_gib = double(roomy.peak_bytes - roomy.boundary_bytes - 1) / kGiB;
            const TargetMachine t = resolveTarget(c);
            const MemoryPlan p = planOnTarget(c, t);
            QVERIFY(p.gradients_on_host);
            const bool unit = std::string(schedule) == "unit";
            const double K = double(p.gradient_accumulation_steps);
            QCOMPARE(p.gradient_bytes, unit ? kTinyLargestUnit * 4 : int64_t(0));
            const StepTimePlan s = predictStepTime(configOnTarget(c, t), p, t);
            // (under unit the boundaries come down too, [m, T, d] fp32: every unit's input and
            // the gradient handed down, 2L + 2 a micro-batch)
            const double boundaries = p.placement.boundaries == Tier::Host
                                          ? double(2 * c.model.n_layers + 2) * double(p.micro_batch_size) *
                                                double(p.seq_len) * double(c.model.dim) * 4
                                          : 0.0;
            QCOMPARE(p.placement.boundaries == Tier::Host, unit);
            QVERIFY(near(s.pcie_down_s, ((unit ? 4 * P / K : 4 * P) + boundaries) / 50e9));
            QVERIFY(near(s.host_adds_s, unit ? 0.0 : 12 * P / 200e9));
            QVERIFY(near(s.to_host_bytes, (unit ? 4 * P : 4 * P * K) + K * boundaries));
        }
    }
};

QTEST_GUILESS_MAIN(TestWindowPlan)
#include "test_window_plan.moc"
