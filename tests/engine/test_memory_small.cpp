// Slow memory suite: the planner against measured peaks on the small preset (59 M parameters,
// 256-token sequences), every split of a global batch of 4. About a minute on two cores.
#include <QtTest/QtTest>

#include <cmath>
#include <tuple>
#include <vector>

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

    // The chunked head (runtime.head_chunk_tokens) at two chunk sizes each: the planner within
    // 10 % of the tracking allocator's peak on the small preset (seq_len 256, every split of a
    // global batch of 4: 256 to 1,024 tokens a micro-batch) and on the medium preset's widths
    // (dim 1,536, vocab 32,768, its dense and MoE block, two layers of its twelve: the head's
    // term is the widths', and twelve layers would not train on this machine; seq_len 512, a
    // global batch of 2).
    void plannerIsWithinTenPercentWithTheHeadInChunks() {
        RunConfig small = loadRunConfigFile(TRAINBENCH_SOURCE_DIR "/configs/small.json");
        small.train.micro_batch_size = 4;
        RunConfig medium = loadRunConfigFile(TRAINBENCH_SOURCE_DIR "/configs/medium.json");
        medium.model.n_layers = 2;
        medium.train.seq_len = 512;
        medium.train.micro_batch_size = 2;
        for (const auto& [name, base, chunks] :
             std::vector<std::tuple<QString, RunConfig, std::pair<int64_t, int64_t>>>{
                 {"small", small, {128, 512}}, {"medium, 2 layers", medium, {128, 1024}}}) {
            for (const int64_t chunk : {chunks.first, chunks.second}) {
                RunConfig c = base;
                c.runtime.device = "cpu";
                c.runtime.dtype = "fp32";
                c.train.gradient_accumulation_steps = 1;
                c.train.global_batch_size = std::nullopt;
                c.runtime.head_chunk_tokens = chunk;
                ExploreOptions options;
                options.steps_per_row = 2;
                const ExploreResult result = exploreBatchSplits(c, 0, options);
                QVERIFY(!result.rows.empty());
                for (const auto& row : result.rows) {
                    QVERIFY2(row.fits, row.note.c_str());
                    const double ratio = double(row.estimated_peak_bytes) / double(row.measured_peak_bytes);
                    qInfo("%s, chunk %lld, m %lld: planned %.1f MiB, measured %.1f MiB (%+.1f %%)", qPrintable(name),
                          (long long)chunk, (long long)row.micro_batch_size, row.estimated_peak_bytes / 1048576.0,
                          row.measured_peak_bytes / 1048576.0, (ratio - 1) * 100);
                    QVERIFY2(std::fabs(ratio - 1.0) < 0.10,
                             qPrintable(QString("%1, chunk %2, m %3: planned %4, measured %5").arg(name).arg(chunk)
                                            .arg(row.micro_batch_size).arg(row.estimated_peak_bytes)
                                            .arg(row.measured_peak_bytes)));
                }
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestMemorySmall)
#include "test_memory_small.moc"
