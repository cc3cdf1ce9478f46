// Tests the batch explorer in the window on the tiny preset: rows arrive, one is recommended, Apply sets it.
#include <memory>
#include <set>
#include <tuple>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTest>

#include "widget_lookup.h"
#include "batch/batch_panel.h"
#include "batch/explorer_chart.h"
#include "batch/explorer_table_model.h"
#include "batch/explorer_worker.h"
#include "app/main_window.h"
#include "trainbench/presets.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// Generous: every row builds and trains a model, on a two-core machine other work shares.
constexpr int kExploreTimeoutMs = 400000;

// The tiny preset (B 16: splits m 1, 2, 4, 8, 16) with short sequences and one thread, so a
// row is one quick optimizer step.
RunConfig tinyExploreConfig() {
    RunConfig config = builtinTinyConfig();
    config.train.seq_len = 16;
    config.train.eval_every = 0;
    config.runtime.threads = 1;
    return config;
}

}  // namespace

class TestBatchExplorer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void exploresEverySplitAndAppliesTheRecommendation();
    void stopEndsTheExplorationEarly();
    void anInvalidConfigIsReported();
    void closingMidExplorationJoinsTheWorker();
    void exploresOverMemoryLayoutsAndAppliesOne();
};

void TestBatchExplorer::exploresEverySplitAndAppliesTheRecommendation() {
    MainWindow window(tinyExploreConfig(), QStringLiteral("tiny"));
    window.resize(1280, 800);
    window.showTab(MainWindow::Tab::Batch);
    window.show();
    BatchPanel* panel = window.batchPanel();
    panel->setExploreStepsPerRow(1);
    auto* explore = child<QPushButton>(window, "exploreButton");
    auto* stop = child<QPushButton>(window, "stopExploreButton");
    auto* apply = child<QPushButton>(window, "applyRecommendationButton");
    auto* start = child<QPushButton>(window, "startButton");
    auto* table = child<QTableView>(window, "explorerTable");
    auto* status = child<QLabel>(window, "explorerStatusLabel");
    QVERIFY(explore && stop && apply && start && table && status);
    auto* model = qobject_cast<ExplorerTableModel*>(table->model());
    QVERIFY(model);
    QCOMPARE(model, panel->explorerModel());

    QSignalSpy exploring(panel, &BatchPanel::exploringChanged);
    QSignalSpy ended(panel, &BatchPanel::explorationFinished);
    QSignalSpy inserted(model, &QAbstractItemModel::rowsInserted);
    QTest::mouseClick(explore, Qt::LeftButton);
    QVERIFY(panel->isExploring());
    QCOMPARE(exploring.count(), 1);
    QCOMPARE(exploring.at(0).at(0).toBool(), true);
    // The GUI thread is free while the worker trains: Start is off, Stop on, Explore off.
    QVERIFY(!start->isEnabled());
    QVERIFY(!explore->isEnabled());
    QVERIFY(stop->isEnabled());
    QVERIFY(!apply->isEnabled());
    QVERIFY(!window.startRun());

    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kExploreTimeoutMs);
    QVERIFY2(!status->text().startsWith(QStringLiteral("Could not")), qPrintable(status->text()));
    QVERIFY(!panel->isExploring());
    QCOMPARE(exploring.count(), 2);
    QCOMPARE(exploring.at(1).at(0).toBool(), false);
    // Rows came one at a time as they were measured, not all at the end.
    QCOMPARE(inserted.count(), 5);
    QCOMPARE(model->rowCount(), 5);
    const std::vector<ExploreRow>& rows = model->rows();
    const int64_t expected_m[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < rows.size(); ++i) {
        QCOMPARE(rows[i].micro_batch_size, expected_m[i]);
        QCOMPARE(rows[i].gradient_accumulation_steps, 16 / expected_m[i]);
        QVERIFY(rows[i].estimated_peak_bytes > 0);
        if (rows[i].fits) QVERIFY(rows[i].tokens_per_s > 0);
    }
    QVERIFY(start->isEnabled());
    QVERIFY(explore->isEnabled());
    QVERIFY(!stop->isEnabled());

    // The recommendation is a row that fits, marked in the table, the chart and the status.
    const int recommended = model->recommended();
    QVERIFY2(recommended >= 0, qPrintable(status->text()));
    const ExploreRow best = rows[static_cast<size_t>(recommended)];
    QVERIFY(best.fits);
    QVERIFY(model->data(model->index(recommended, 0), ExplorerTableModel::RecommendedRole).toBool());
    const QString best_split =
        QStringLiteral("m %1 × K %2").arg(best.micro_batch_size).arg(best.gradient_accumulation_steps);
    QVERIFY2(status->text().contains(best_split), qPrintable(status->text()));
    ExplorerChart* chart = panel->explorerChart();
    int fitting = 0;
    for (const ExploreRow& row : rows) fitting += row.fits ? 1 : 0;
    QCOMPARE(chart->throughputGraph()->dataCount(), fitting);
    QCOMPARE(chart->measuredPeakGraph()->dataCount(), fitting);
    QCOMPARE(chart->plannedPeakGraph()->dataCount(), 5);

    // Apply: first move away from the recommendation (it may be the preset's own split), then
    // one click puts it back into the window's config.
    auto* m_spin = child<QSpinBox>(window, "microBatchSpin");
    m_spin->setValue(best.micro_batch_size == 1 ? 2 : 1);
    QVERIFY(window.runConfig().train.micro_batch_size != best.micro_batch_size);
    QVERIFY(apply->isEnabled());
    QTest::mouseClick(apply, Qt::LeftButton);
    QCOMPARE(window.runConfig().train.micro_batch_size, best.micro_batch_size);
    QCOMPARE(window.runConfig().train.gradient_accumulation_steps, best.gradient_accumulation_steps);
    QCOMPARE(window.runConfig().globalBatch(), int64_t(16));
    QCOMPARE(m_spin->value(), static_cast<int>(best.micro_batch_size));
    QCOMPARE(child<QSpinBox>(window, "accumulationSpin")->value(), static_cast<int>(best.gradient_accumulation_steps));
    // In force now: nothing left to apply.
    QVERIFY(!apply->isEnabled());

    // Another global batch makes the rows stale: they no longer recommend anything.
    child<QSpinBox>(window, "accumulationSpin")->setValue(static_cast<int>(best.gradient_accumulation_steps) + 1);
    QVERIFY(!apply->isEnabled());
    QVERIFY(!panel->applyRecommendation());
    QVERIFY2(status->text().contains(QStringLiteral("explore again")), qPrintable(status->text()));
}

void TestBatchExplorer::stopEndsTheExplorationEarly() {
    MainWindow window(tinyExploreConfig(), QStringLiteral("tiny"));
    BatchPanel* panel = window.batchPanel();
    panel->setExploreStepsPerRow(2);
    QSignalSpy ended(panel, &BatchPanel::explorationFinished);
    QVERIFY(panel->explore());
    // The explorer looks at the flag between rows: it ends after the row under way, long
    // before the last of the five.
    QTest::mouseClick(child<QPushButton>(window, "stopExploreButton"), Qt::LeftButton);
    QVERIFY(!child<QPushButton>(window, "stopExploreButton")->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kExploreTimeoutMs);
    QVERIFY(!panel->isExploring());
    const int rows = panel->explorerModel()->rowCount();
    QVERIFY2(rows < 5, qPrintable(QString::number(rows)));
    const QString status = child<QLabel>(window, "explorerStatusLabel")->text();
    QVERIFY2(status.startsWith(QStringLiteral("Stopped after %1 of 5").arg(rows)), qPrintable(status));
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());
    QVERIFY(child<QPushButton>(window, "exploreButton")->isEnabled());
}

void TestBatchExplorer::anInvalidConfigIsReported() {
    RunConfig config = tinyExploreConfig();
    config.data.source = "no-such-source";
    MainWindow window(config, QStringLiteral("broken"));
    BatchPanel* panel = window.batchPanel();
    QSignalSpy ended(panel, &BatchPanel::explorationFinished);
    QVERIFY(panel->explore());
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kExploreTimeoutMs);
    const QString status = child<QLabel>(window, "explorerStatusLabel")->text();
    QVERIFY2(status.startsWith(QStringLiteral("Could not explore")), qPrintable(status));
    QVERIFY2(status.contains(QStringLiteral("data.source")), qPrintable(status));
    QCOMPARE(panel->explorerModel()->rowCount(), 0);
    QVERIFY(!child<QPushButton>(window, "applyRecommendationButton")->isEnabled());
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());
}

void TestBatchExplorer::closingMidExplorationJoinsTheWorker() {
    auto window = std::make_unique<MainWindow>(tinyExploreConfig(), QStringLiteral("tiny"));
    window->show();
    window->batchPanel()->setExploreStepsPerRow(1);
    QSignalSpy inserted(window->batchPanel()->explorerModel(), &QAbstractItemModel::rowsInserted);
    QVERIFY(window->batchPanel()->explore());
    QTRY_VERIFY_WITH_TIMEOUT(inserted.count() >= 1, kExploreTimeoutMs);
    // close() cancels; the destructor joins within the row under way, and the rows the thread
    // still reports are dropped with the worker instead of reaching deleted widgets.
    QVERIFY(window->close());
    window.reset();
}


// Over the memory layouts: two ranks and one sequence each (a single split, m 1), measured at
// every ZeRO stage and with the experts divided between the two (EP 2, at every stage), with and without
// recomputation; the recommendation's layout and split are
// applied together, and the rows stay current (their layout is not part of what they are for).
void TestBatchExplorer::exploresOverMemoryLayoutsAndAppliesOne() {
    RunConfig config = tinyExploreConfig();
    config.runtime.world_size = 2;
    config.train.micro_batch_size = 1;
    config.train.gradient_accumulation_steps = 1;
    MainWindow window(config, QStringLiteral("tiny"));
    window.showTab(MainWindow::Tab::Batch);
    window.show();
    BatchPanel* panel = window.batchPanel();
    panel->setExploreStepsPerRow(1);
    child<QCheckBox>(window, "exploreLayoutsCheck")->setChecked(true);
    QSignalSpy ended(panel, &BatchPanel::explorationFinished);
    QTest::mouseClick(child<QPushButton>(window, "exploreButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kExploreTimeoutMs);
    const std::vector<ExploreRow>& rows = panel->explorerModel()->rows();
    QCOMPARE(rows.size(), size_t(24));  // (4 stages, EP 2 at each) x 3 recomputation modes
    std::set<std::tuple<int64_t, int64_t, std::string>> layouts;
    for (const ExploreRow& row : rows) {
        QVERIFY2(row.fits, row.note.c_str());
        layouts.insert({row.zero_stage, row.expert_parallel, row.activation_checkpointing});
    }
    QCOMPARE(layouts.size(), size_t(24));
    // In cost order, per recomputation mode: stages 0-2, EP 2 at stages 0-2, stage 3, stage 3 with EP 2.
    const QModelIndex layout_cell = panel->explorerModel()->index(22, ExplorerTableModel::Layout);
    QCOMPARE(panel->explorerModel()->data(layout_cell).toString(), QStringLiteral("stage 3 · full"));
    QCOMPARE(panel->explorerModel()->data(panel->explorerModel()->index(23, ExplorerTableModel::Layout)).toString(),
             QStringLiteral("stage 3 · EP 2 · full"));
    const QModelIndex ep_cell = panel->explorerModel()->index(3, ExplorerTableModel::Layout);
    QCOMPARE(panel->explorerModel()->data(ep_cell).toString(), QStringLiteral("stage 0 · EP 2"));
    QCOMPARE(panel->explorerModel()->data(panel->explorerModel()->index(4, ExplorerTableModel::Layout)).toString(),
             QStringLiteral("stage 1 · EP 2"));
    const int recommended = panel->explorerModel()->recommended();
    QVERIFY(recommended >= 0);
    const ExploreRow best = rows[static_cast<size_t>(recommended)];
    // Move away from the recommended layout (Apply turns on, even where the recommendation
    // was the layout explored from and so was off), then apply it back.
    auto* stage = child<QComboBox>(window, "zeroStageCombo");
    stage->setCurrentIndex(best.zero_stage == 3 ? 2 : 3);
    auto* apply = child<QPushButton>(window, "applyRecommendationButton");
    QVERIFY(apply->isEnabled());
    QTest::mouseClick(apply, Qt::LeftButton);
    QCOMPARE(window.runConfig().runtime.zero_stage, best.zero_stage);
    QCOMPARE(window.runConfig().runtime.activation_checkpointing, best.activation_checkpointing);
    QCOMPARE(window.runConfig().runtime.expert_parallel, best.expert_parallel);
    QCOMPARE(stage->currentData().toLongLong(), best.zero_stage);
    QVERIFY(!apply->isEnabled());
}

QTEST_MAIN(TestBatchExplorer)
#include "test_batch_explorer.moc"
