// Tests the step time chart's phases and term totals against steps counted by hand.
#include <utility>

#include <QTest>

#include "batch/step_time_chart.h"

using namespace trainbench;
using namespace trainbench::gui;

class TestStepTimeChart : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Offload on a GPU: each micro-batch paced by PCIe up (2 s against compute's 1 s), K = 4; the
    // tail paced by the CPU AdamW (5 s against NVMe's 3 s and host memory's 4 s); then the
    // weights up. Step: 4 x 2 + 5 + 0.5 = 13.5 s.
    void anOffloadedStepIsItsWindowItsTailAndTheWeightsUp() {
        StepTimePlan t;
        t.compute_s = 1.0;
        t.pcie_up_s = 2.0;
        t.pcie_down_s = 1.0;
        t.pcie_s = 2.0;
        t.host_memory_s = 0.5;
        t.micro_batch_s = 2.0;
        t.optimizer_s = 5.0;
        t.nvme_step_s = 3.0;
        t.tail_host_memory_s = 4.0;
        t.gradients_down_s = 0.25;
        t.weights_up_s = 0.5;
        t.step_s = 13.5;
        const auto phases = StepTimeChart::phases(t, 4);
        QCOMPARE(phases.size(), size_t(3));
        QCOMPARE(phases[0].term, QStringLiteral("PCIe up"));
        QCOMPARE(phases[0].seconds, 8.0);
        QCOMPARE(phases[1].term, QStringLiteral("CPU AdamW"));
        QCOMPARE(phases[1].seconds, 5.0);
        QCOMPARE(phases[2].term, QStringLiteral("PCIe up"));
        QCOMPARE(phases[2].seconds, 0.5);

        // Over the step: compute 4 x 1, PCIe up 4 x 2 + 0.5, down 4 x 1 + 0.25, NVMe 3 (the
        // step's moves), host memory 4 x 0.5 + 4, CPU AdamW 5; collectives none, left out.
        const auto totals = StepTimeChart::termTotals(t, 4);
        QCOMPARE(totals.size(), size_t(6));
        const std::pair<const char*, double> expected[] = {{"compute", 4.0},     {"PCIe up", 8.5},
                                                           {"PCIe down", 4.25},  {"NVMe", 3.0},
                                                           {"host memory", 6.0}, {"CPU AdamW", 5.0}};
        for (size_t i = 0; i < totals.size(); ++i) {
            QCOMPARE(totals[i].term, QString::fromLatin1(expected[i].first));
            QCOMPARE(totals[i].seconds, expected[i].second);
        }
    }

    // Nothing off the device: the window is all there is, paced by compute, and the chart's one
    // phase is the step.
    void aStepOnTheDeviceIsOnePhaseOfCompute() {
        StepTimePlan t;
        t.compute_s = 0.25;
        t.collectives_s = 0.125;
        t.micro_batch_s = 0.25;
        t.step_s = 2.0;
        const auto phases = StepTimeChart::phases(t, 8);
        QCOMPARE(phases.size(), size_t(1));
        QCOMPARE(phases[0].term, QStringLiteral("compute"));
        QCOMPARE(phases[0].seconds, 2.0);
        QCOMPARE(StepTimeChart::termTotals(t, 8).size(), size_t(2));
        QVERIFY(StepTimeChart::termColor(QStringLiteral("compute")) != StepTimeChart::termColor(QStringLiteral("PCIe up")));
    }
};

QTEST_MAIN(TestStepTimeChart)
#include "test_step_time_chart.moc"
