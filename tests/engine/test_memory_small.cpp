// Slow memory suite: the planner against measured peaks on the small preset (59 M parameters,
// 256-token sequences), every split of a global batch of 4. About a minute on two cores.
#include <QtTest/QtTest>

#include <cmath>

#include "trainbench/batch_explorer.h"
#include "trainbench/config_io.h"

using namespace trainbench;

class TestMemorySmall : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void plannerIsWithinFifteenPercentOnTheSmallPreset() {
        RunConfig c = loadRunConfigFile(TRAINBENCH_SOURCE_DIR "/configs/small.json");
        c.runtime.device = "cpu";
        c.train.micro_batch_size = 4;
        c.train.gradient_accumulation_steps = 1;
        ExploreOptions options;
        options.steps_per_row = 2;
        const ExploreResult result = exploreBatchSplits(c, 0, options);
        QCOMPARE(result.rows.size(), size_t(3));  // m = 1, 2, 4
        for (const auto& row : result.rows) {
            QVERIFY2(row.fits, row.note.c_str());
            const double ratio = double(row.estimated_peak_bytes) / double(row.measured_peak_bytes);
            QVERIFY2(std::fabs(ratio - 1.0) < 0.15,
                     qPrintable(QString("m=%1 K=%2: planned %3, measured %4").arg(row.micro_batch_size)
                                    .arg(row.gradient_accumulation_steps).arg(row.estimated_peak_bytes)
                                    .arg(row.measured_peak_bytes)));
        }
    }
};

QTEST_APPLESS_MAIN(TestMemorySmall)
#include "test_memory_small.moc"
