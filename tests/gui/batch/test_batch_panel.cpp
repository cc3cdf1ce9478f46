// Tests the batch panel inside the window: editing m and K re-splits the config, the memory plan follows.
#include <cmath>

#include <QClipboard>
#include <QGuiApplication>
#include <QAction>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QGroupBox>
#include <QUndoStack>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QSpinBox>
#include <QTabWidget>
#include <QTest>

#include "widget_lookup.h"
#include "batch/batch_panel.h"
#include "batch/plan_wording.h"
#include "common/config_edit.h"
#include "common/display_format.h"
#include "runs/engine_bridge.h"
#include "app/main_window.h"
#include "monitor/monitor_view.h"
#include "monitor/metric_plots.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/presets.h"
#include "configure/config_presets.h"
#include "configure/config_form.h"
#include "configure/configure_view.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int kRunTimeoutMs = 180000;
constexpr int64_t kMiB = 1024 * 1024;

// The tiny preset: m 8 × K 2 × W 1 = B 16 sequences of 64 tokens.
RunConfig tinyPreset() {
    RunConfig config = builtinTinyConfig();
    config.runtime.threads = 1;
    return config;
}

// What the peak label must say for the window's config: the planner's peak against the budget
// the panel documents, formatted like every byte count of the workbench.
QString expectedPeakText(const RunConfig& config) {
    return formatBytes(planMemory(config, BatchPanel::memoryBudgetBytes(config)).peak_bytes);
}

// A model small enough to size its decoding cache by hand: 2 layers of 4 heads, qk_nope 8,
// qk_rope 4, v 8, a latent of 16; 3 cache rows of 64 positions.
RunConfig handSizedCacheConfig() {
    RunConfig config = tinyPreset();
    config.model.n_layers = 2;
    config.model.n_heads = 4;
    config.model.qk_nope_head_dim = 8;
    config.model.qk_rope_head_dim = 4;
    config.model.v_head_dim = 8;
    config.model.kv_lora_rank = 16;
    config.model.max_batch_size = 3;
    config.model.max_seq_len = 64;
    return config;
}

QString labelText(const QWidget& parent, const char* name) {
    auto* label = child<QLabel>(parent, name);
    return label ? label->text() : QString();
}

}  // namespace

class TestBatchPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void showsTheConfigSplit();
    void microBatchResplitsTheGlobalBatch_data();
    void microBatchResplitsTheGlobalBatch();
    void aDividingMicroBatchRestoresTheChosenBatch();
    void arrowsStepThroughTheSplits();
    void accumulationChoosesTheGlobalBatch();
    void globalBatchSizeFollowsTheSplit();
    void budgetVerdictAndLargestFittingMicroBatch();
    void budgetShareReadsAsAPercentThenAMultiple_data();
    void budgetShareReadsAsAPercentThenAMultiple();
    void aPlanTheEngineRefusesDisablesStart();
    void memoryLayoutChoicesShowTheirPeaksAndApply();
    void offloadIsAnUndoableEditOfTheWindowsConfig();
    void liveRunLocksTheSplitAndTheExplorer();
    void theCriticalBatchIsShownBesideB();
    void theExpertsCanBeDividedAmongRanks();
    void aCheckpointsCriticalBatchIsMeasuredOnRequest();
    void theDecodingCacheIsShownInBothForms();
    void theDecodingCacheFollowsConfigureEdits();
    void thePublishedModelsCacheMatchesThePlanCommand();
    void theRanksRowShowsHowToStartThemAsProcesses();
};

void TestBatchPanel::showsTheConfigSplit() {
    MainWindow window(tinyPreset(), QStringLiteral("tiny"));
    auto* panel = child<BatchPanel>(window, "batchPanel");
    QVERIFY(panel);
    QCOMPARE(window.batchPanel(), panel);
    QCOMPARE(child<QSpinBox>(window, "microBatchSpin")->value(), 8);
    QCOMPARE(child<QSpinBox>(window, "accumulationSpin")->value(), 2);
    QCOMPARE(child<QLabel>(window, "worldSizeLabel")->text(), QStringLiteral("× W 1"));
    QCOMPARE(child<QLabel>(window, "globalBatchLabel")->text(), QStringLiteral("= B 16"));
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), expectedPeakText(window.runConfig()));
    // No memory_limit_mb in the preset: the budget is the host's RAM, and the tiny model fits.
    QCOMPARE(child<QLabel>(window, "planBudgetLabel")->text(), formatBytes(deviceMemoryBytesPerRank(window.runConfig())));
    QVERIFY2(child<QLabel>(window, "planVerdictLabel")->text().contains(QStringLiteral("Fits")),
             qPrintable(child<QLabel>(window, "planVerdictLabel")->text()));
    // The explorer has nothing to recommend yet.
    QVERIFY(child<QPushButton>(window, "exploreButton")->isEnabled());
    QVERIFY(!child<QPushButton>(window, "applyRecommendationButton")->isEnabled());
}

void TestBatchPanel::microBatchResplitsTheGlobalBatch_data() {
    QTest::addColumn<int>("micro_batch");
    QTest::addColumn<int>("accumulation");
    QTest::addColumn<int>("global_batch");
    // B 16 is kept whenever m divides it; otherwise K is the nearest whole number.
    QTest::newRow("m 16") << 16 << 1 << 16;
    QTest::newRow("m 4") << 4 << 4 << 16;
    QTest::newRow("m 2") << 2 << 8 << 16;
    QTest::newRow("m 1") << 1 << 16 << 16;
    QTest::newRow("m 3: 16 / 3 = 5.3") << 3 << 5 << 15;
    QTest::newRow("m 6: 16 / 6 = 2.7") << 6 << 3 << 18;
    QTest::newRow("m 32: at least one micro-batch") << 32 << 1 << 32;
}

void TestBatchPanel::microBatchResplitsTheGlobalBatch() {
    QFETCH(int, micro_batch);
    QFETCH(int, accumulation);
    QFETCH(int, global_batch);
    MainWindow window(tinyPreset(), QStringLiteral("tiny"));
    auto* m_spin = child<QSpinBox>(window, "microBatchSpin");
    auto* k_spin = child<QSpinBox>(window, "accumulationSpin");
    auto* peak = child<QLabel>(window, "planPeakLabel");
    QSignalSpy requested(window.batchPanel(), &BatchPanel::configEditRequested);

    m_spin->setValue(micro_batch);

    QCOMPARE(requested.count(), 1);
    const RunConfig& config = window.runConfig();
    QCOMPARE(config.train.micro_batch_size, int64_t(micro_batch));
    QCOMPARE(config.train.gradient_accumulation_steps, int64_t(accumulation));
    QCOMPARE(config.globalBatch(), int64_t(global_batch));
    QCOMPARE(k_spin->value(), accumulation);
    QVERIFY(validateRunConfig(config).empty());
    // The window's own summary and the panel agree with the config.
    QCOMPARE(child<QLabel>(window, "batchLabel")->text(), formatBatchEquation(micro_batch, accumulation, 1));
    QCOMPARE(child<QLabel>(window, "globalBatchLabel")->text(), QStringLiteral("= B %1").arg(global_batch));
    QCOMPARE(peak->text(), expectedPeakText(config));
    QCOMPARE(window.batchPanel()->memoryPlan().micro_batch_size, int64_t(micro_batch));
    // A split that moves B says so.
    const QString hint = child<QLabel>(window, "splitHintLabel")->text();
    QCOMPARE(hint.contains(QStringLiteral("does not divide")), global_batch != 16);
}

void TestBatchPanel::aDividingMicroBatchRestoresTheChosenBatch() {
    MainWindow window(tinyPreset(), QStringLiteral("tiny"));
    auto* m_spin = child<QSpinBox>(window, "microBatchSpin");
    m_spin->setValue(3);
    QCOMPARE(window.runConfig().globalBatch(), int64_t(15));
    m_spin->setValue(2);
    QCOMPARE(window.runConfig().train.gradient_accumulation_steps, int64_t(8));
    QCOMPARE(window.runConfig().globalBatch(), int64_t(16));
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), expectedPeakText(window.runConfig()));
}

void TestBatchPanel::arrowsStepThroughTheSplits() {
    MainWindow window(tinyPreset(), QStringLiteral("tiny"));
    auto* m_spin = child<QSpinBox>(window, "microBatchSpin");
    auto* k_spin = child<QSpinBox>(window, "accumulationSpin");
    // The divisors of 16 from m 8: up to 16, then down through 8, 4.
    QTest::keyClick(m_spin, Qt::Key_Up);
    QCOMPARE(m_spin->value(), 16);
    QCOMPARE(k_spin->value(), 1);
    QTest::keyClick(m_spin, Qt::Key_Down);
    QTest::keyClick(m_spin, Qt::Key_Down);
    QCOMPARE(m_spin->value(), 4);
    QCOMPARE(window.runConfig().train.micro_batch_size, int64_t(4));
    QCOMPARE(window.runConfig().train.gradient_accumulation_steps, int64_t(4));
    // From a value that is no divisor the arrows land on the next divisor.
    m_spin->setValue(3);
    QTest::keyClick(m_spin, Qt::Key_Up);
    QCOMPARE(m_spin->value(), 4);
    QCOMPARE(window.runConfig().globalBatch(), int64_t(16));
    m_spin->setValue(1);
    QTest::keyClick(m_spin, Qt::Key_Down);
    QCOMPARE(m_spin->value(), 1);
}

void TestBatchPanel::accumulationChoosesTheGlobalBatch() {
    MainWindow window(tinyPreset(), QStringLiteral("tiny"));
    auto* m_spin = child<QSpinBox>(window, "microBatchSpin");
    auto* k_spin = child<QSpinBox>(window, "accumulationSpin");
    k_spin->setValue(4);
    QCOMPARE(window.runConfig().train.micro_batch_size, int64_t(8));
    QCOMPARE(window.runConfig().globalBatch(), int64_t(32));
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), expectedPeakText(window.runConfig()));
    // From now on m edits keep B 32.
    m_spin->setValue(16);
    QCOMPARE(k_spin->value(), 2);
    QCOMPARE(window.runConfig().globalBatch(), int64_t(32));
    // The accumulation count does not change activations, the micro-batch does.
    QCOMPARE(window.batchPanel()->memoryPlan().activation_bytes,
             planMemory(window.runConfig()).activation_bytes);
}

void TestBatchPanel::globalBatchSizeFollowsTheSplit() {
    RunConfig config = tinyPreset();
    config.train.global_batch_size = 16;
    MainWindow window(config, QStringLiteral("tiny"));
    child<QSpinBox>(window, "accumulationSpin")->setValue(3);
    QCOMPARE(window.runConfig().train.global_batch_size.value_or(0), int64_t(24));
    QVERIFY(validateRunConfig(window.runConfig()).empty());
    child<QSpinBox>(window, "microBatchSpin")->setValue(4);
    QCOMPARE(window.runConfig().train.gradient_accumulation_steps, int64_t(6));
    QCOMPARE(window.runConfig().train.global_batch_size.value_or(0), int64_t(24));
    QVERIFY(validateRunConfig(window.runConfig()).empty());
}

void TestBatchPanel::budgetVerdictAndLargestFittingMicroBatch() {
    // A budget of whole MiB between the planner's peak at m 1 and at m 16: some splits fit.
    RunConfig probe = tinyPreset();
    probe.train.micro_batch_size = 1;
    probe.train.gradient_accumulation_steps = 16;
    const int64_t smallest_peak = planMemory(probe).peak_bytes;
    probe.train.micro_batch_size = 16;
    probe.train.gradient_accumulation_steps = 1;
    const int64_t largest_peak = planMemory(probe).peak_bytes;
    const int64_t limit_mb = (smallest_peak + kMiB - 1) / kMiB;
    if (limit_mb * kMiB >= largest_peak) QSKIP("the tiny preset's splits all fit in the same whole MiB");

    RunConfig config = tinyPreset();
    config.runtime.memory_limit_mb = limit_mb;
    config.train.micro_batch_size = 16;
    config.train.gradient_accumulation_steps = 1;
    MainWindow window(config, QStringLiteral("tiny"));
    auto* verdict = child<QLabel>(window, "planVerdictLabel");
    QCOMPARE(child<QLabel>(window, "planBudgetLabel")->text(), formatBytes(limit_mb * kMiB));
    QVERIFY2(verdict->text().contains(QStringLiteral("Does not fit")), qPrintable(verdict->text()));
    QVERIFY2(verdict->text().contains(formatBytes(largest_peak - limit_mb * kMiB)), qPrintable(verdict->text()));

    const MemoryPlan plan = planMemory(window.runConfig());
    QVERIFY(!plan.fits);
    QVERIFY(plan.largest_fitting_micro_batch >= 1);
    QCOMPARE(child<QLabel>(window, "largestFittingLabel")->text(),
             QStringLiteral("m %1 × K %2")
                 .arg(plan.largest_fitting_micro_batch)
                 .arg(16 / plan.largest_fitting_micro_batch));
    // Over a budget of runtime.memory_limit_mb the engine starts and backs off to a smaller m,
    // so Start stays enabled.
    QVERIFY(window.batchPanel()->startRefusal().isEmpty());
    QVERIFY(child<QPushButton>(window, "startButton")->isEnabled());

    // Down to the largest split that fits: the verdict turns.
    child<QSpinBox>(window, "microBatchSpin")->setValue(static_cast<int>(plan.largest_fitting_micro_batch));
    QVERIFY2(verdict->text().contains(QStringLiteral("Fits")), qPrintable(verdict->text()));
    QVERIFY(window.batchPanel()->memoryPlan().fits);
}

void TestBatchPanel::liveRunLocksTheSplitAndTheExplorer() {
    RunConfig config = tinyPreset();
    config.train.steps = 100000;  // cannot end before the checks
    config.train.seq_len = 16;
    config.train.eval_every = 0;
    MainWindow window(config, QStringLiteral("tiny"));
    window.show();
    auto* m_spin = child<QSpinBox>(window, "microBatchSpin");
    auto* k_spin = child<QSpinBox>(window, "accumulationSpin");
    auto* explore = child<QPushButton>(window, "exploreButton");
    auto* tabs = child<QTabWidget>(window, "mainTabs");
    window.showTab(MainWindow::Tab::Batch);
    QCOMPARE(tabs->currentWidget(), window.batchPanel());

    QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
    QVERIFY(window.startRun());
    // Starting shows the live plots.
    QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(window.monitorView()));
    QVERIFY(!m_spin->isEnabled());
    QVERIFY(!k_spin->isEnabled());
    QVERIFY(!explore->isEnabled());
    QVERIFY(!window.batchPanel()->explore());
    RunConfig resplit = window.runConfig();
    resplit.train.micro_batch_size = 4;
    resplit.train.gradient_accumulation_steps = 4;
    QVERIFY(!window.applyEdit(configEditBetween(window.runConfig(), resplit, QStringLiteral("Batch split m 4 × K 4"))));
    QCOMPARE(window.runConfig().train.micro_batch_size, int64_t(8));

    window.stopRun();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
    QVERIFY(m_spin->isEnabled());
    QVERIFY(k_spin->isEnabled());
    QVERIFY(explore->isEnabled());
    // After the run the split can change again, and the plots of the run stay.
    const int points = window.plots()->lossRawGraph()->dataCount();
    m_spin->setValue(4);
    QCOMPARE(window.runConfig().train.gradient_accumulation_steps, int64_t(4));
    QCOMPARE(window.plots()->lossRawGraph()->dataCount(), points);
}

void TestBatchPanel::budgetShareReadsAsAPercentThenAMultiple_data() {
    QTest::addColumn<double>("share");
    QTest::addColumn<QString>("text");
    QTest::newRow("a sliver") << 0.0004 << "peak: < 0.1 % of the budget";
    QTest::newRow("half") << 0.5 << "peak: 50.0 % of the budget";
    QTest::newRow("a little over") << 1.5 << "peak: 150.0 % of the budget";
    QTest::newRow("three times") << 3.27 << "peak: 3.3× the budget";
    QTest::newRow("DeepSeek-V3 on this host") << 424.76 << "peak: 425× the budget";
}

void TestBatchPanel::budgetShareReadsAsAPercentThenAMultiple() {
    QFETCH(double, share);
    QFETCH(QString, text);
    QCOMPARE(formatShareOfBudget(share), text);
}

// The published DeepSeek-V3 config needs terabytes per rank: the bar says how many times the
// budget, and Start is off with the engine's reason until a config that fits is shown.
void TestBatchPanel::aPlanTheEngineRefusesDisablesStart() {
    RunConfig big;
    for (const ConfigPreset& preset : configPresets())
        if (preset.file == QLatin1String("configs/deepseek/config_671B.json")) big = loadConfigPreset(preset);
    QCOMPARE(big.model.dim, int64_t(7168));
    MainWindow window(big, QStringLiteral("r671.json"));
    auto* start = child<QPushButton>(window, "startButton");
    auto* bar = child<QProgressBar>(window, "planBudgetBar");
    const MemoryPlan& plan = window.batchPanel()->memoryPlan();
    QVERIFY(plan.limit_bytes > 0 && !plan.fits);
    const double share = double(plan.peak_bytes) / double(plan.limit_bytes);
    QVERIFY2(share > 10, qPrintable(QString::number(share)));
    QCOMPARE(bar->format(), QStringLiteral("peak: %1× the budget").arg(std::lround(share)));
    QVERIFY(!start->isEnabled());
    QVERIFY(!child<QAction>(window, "startAction")->isEnabled());
    QVERIFY2(start->toolTip().contains(QStringLiteral("Does not fit")) &&
                 start->toolTip().contains(QStringLiteral("train.micro_batch_size")),
             qPrintable(start->toolTip()));
    auto* status = child<QLabel>(window, "statusLabel");
    QVERIFY2(status->text().contains(QStringLiteral("Does not fit")), qPrintable(status->text()));
    QVERIFY(!window.startRun());  // asked anyway (a shortcut, a script): the engine says no
    QVERIFY(!window.bridge()->isLive());

    QVERIFY(window.setRunConfig(tinyPreset(), QStringLiteral("tiny")));
    QVERIFY(start->isEnabled());
    QVERIFY(start->toolTip().isEmpty());
    QVERIFY2(status->text().startsWith(QStringLiteral("Ready")), qPrintable(status->text()));
    QVERIFY(child<QAction>(window, "startAction")->isEnabled());
}

// The layout boxes name each choice with the peak the planner gives it; a choice is an undoable
// edit of the window's config, and the plan follows it (and the undo).
void TestBatchPanel::memoryLayoutChoicesShowTheirPeaksAndApply() {
    RunConfig config = tinyPreset();
    config.runtime.world_size = 2;
    config.train.micro_batch_size = 4;
    MainWindow window(config, QStringLiteral("tiny"));
    auto* stage = child<QComboBox>(window, "zeroStageCombo");
    auto* recompute = child<QComboBox>(window, "recomputationCombo");
    auto variant = [&](int64_t zero_stage, const char* checkpointing) {
        RunConfig c = config;
        c.runtime.zero_stage = zero_stage;
        c.runtime.activation_checkpointing = checkpointing;
        return planMemory(c, BatchPanel::memoryBudgetBytes(c));
    };
    QCOMPARE(stage->count(), 4);
    QVERIFY2(stage->itemText(2).endsWith(formatBytes(variant(2, "none").peak_bytes)), qPrintable(stage->itemText(2)));
    QVERIFY2(stage->itemText(3).endsWith(formatBytes(variant(3, "none").peak_bytes)), qPrintable(stage->itemText(3)));
    // The collectives of a step and what fits the budget, from the planner.
    QCOMPARE(child<QLabel>(window, "planCollectivesLabel")->text(),
             QStringLiteral("%1 sent, %2 calls per step")
                 .arg(formatBytes(variant(0, "none").bytes_sent_per_step))
                 .arg(variant(0, "none").collectives_per_step));
    const LayoutAdvice advice = adviseLayout(config, BatchPanel::memoryBudgetBytes(config));
    QCOMPARE(child<QLabel>(window, "layoutAdviceLabel")->text(), describeLayoutAdvice(advice, 2));
    QVERIFY2(child<QLabel>(window, "layoutAdviceLabel")->text().startsWith(QStringLiteral("Cheapest that fits on 2 ranks, 10 % to spare: stage 0")),
             qPrintable(child<QLabel>(window, "layoutAdviceLabel")->text()));
    QCOMPARE(stage->currentIndex(), 0);
    QVERIFY2(stage->itemText(1).endsWith(formatBytes(variant(1, "none").peak_bytes)), qPrintable(stage->itemText(1)));
    QCOMPARE(recompute->count(), 3);
    QVERIFY2(recompute->itemText(1).endsWith(formatBytes(variant(0, "feedforward").peak_bytes)),
             qPrintable(recompute->itemText(1)));
    QVERIFY2(recompute->itemText(2).endsWith(formatBytes(variant(0, "full").peak_bytes)),
             qPrintable(recompute->itemText(2)));
    QVERIFY(variant(1, "none").peak_bytes < variant(0, "none").peak_bytes);

    stage->setCurrentIndex(1);
    QCOMPARE(window.runConfig().runtime.zero_stage, int64_t(1));
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), formatBytes(variant(1, "none").peak_bytes));
    QVERIFY2(child<QLabel>(window, "planOptimizerLabel")->text().contains(QStringLiteral("1/2")),
             qPrintable(child<QLabel>(window, "planOptimizerLabel")->text()));
    recompute->setCurrentIndex(2);
    QCOMPARE(window.runConfig().runtime.activation_checkpointing, std::string("full"));
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), formatBytes(variant(1, "full").peak_bytes));
    // The recomputation box now names its choices at stage 1.
    QVERIFY(recompute->itemText(0).endsWith(formatBytes(variant(1, "none").peak_bytes)));

    QUndoStack* undo = window.configureView()->undoStack();
    QCOMPARE(undo->count(), 2);
    undo->undo();
    QCOMPARE(window.runConfig().runtime.activation_checkpointing, std::string("none"));
    QCOMPARE(recompute->currentIndex(), 0);
    QCOMPARE(stage->currentIndex(), 1);
}

// The offload choice edits the window's config as one undoable step, like the layout boxes.
void TestBatchPanel::offloadIsAnUndoableEditOfTheWindowsConfig() {
    RunConfig config = tinyPreset();
    config.runtime.device = "cpu";
    config.runtime.zero_stage = 1;
    MainWindow window(config, QStringLiteral("tiny"));
    auto* offload = child<QComboBox>(window, "offloadCombo");
    QUndoStack* undo = window.configureView()->undoStack();
    const int steps = undo->count();
    offload->setCurrentIndex(1);  // optimizer → host memory
    QCOMPARE(window.runConfig().runtime.offload, std::string("optimizer"));
    QCOMPARE(window.runConfig().runtime.offload_dir, std::string());
    QCOMPARE(undo->count(), steps + 1);
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), expectedPeakText(window.runConfig()));
    undo->undo();
    QCOMPARE(window.runConfig().runtime.offload, std::string("none"));
    QCOMPARE(offload->currentIndex(), 0);
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), expectedPeakText(window.runConfig()));
}

// The newest run's critical batch beside B (tiny: m 8 x K 2 = B 16): 56 sequences is 3.5x B,
// so K 2 becomes 2 x 3 = 6 (B 48); after raising K to 4 (B 32) the same estimate is within a
// factor of two and no advice is given; a new run clears it. Under batch_policy adaptive the
// sentence says what the policy will do instead.
void TestBatchPanel::theCriticalBatchIsShownBesideB() {
    MainWindow window(tinyPreset(), QStringLiteral("tiny"));
    auto* label = child<QLabel>(window, "criticalBatchLabel");
    QVERIFY2(label->text().contains(QStringLiteral("not measured yet")), qPrintable(label->text()));
    window.batchPanel()->setCriticalBatch(56.0, 0.12, 300);
    QVERIFY2(label->text().startsWith(QStringLiteral("Critical batch at step 300: ~56 sequences (± 12 %), 3.5× B.")),
             qPrintable(label->text()));
    QVERIFY2(label->text().endsWith(QStringLiteral("Raise K to 6 (B 48, the same memory).")), qPrintable(label->text()));
    child<QSpinBox>(window, "accumulationSpin")->setValue(4);
    QVERIFY2(label->text().endsWith(QStringLiteral("1.8× B.")), qPrintable(label->text()));
    window.batchPanel()->setCriticalBatch(0, 0, 0);
    QVERIFY(label->text().contains(QStringLiteral("not measured yet")));
    // Under the adaptive policy K follows the estimate by itself: the panel says how, not "raise K".
    RunConfig adaptive = tinyPreset();
    adaptive.train.batch_policy = "adaptive";
    adaptive.train.batch_adapt_max_accumulation = 16;
    adaptive.train.batch_adapt_dwell_tokens = 16384;
    MainWindow adapting(adaptive, QStringLiteral("tiny"));
    auto* adaptive_label = child<QLabel>(adapting, "criticalBatchLabel");
    adapting.batchPanel()->setCriticalBatch(56.0, 0.12, 300);
    QVERIFY2(adaptive_label->text().endsWith(
                 QStringLiteral("The adaptive batch raises K (up to 16) while the estimate stays above 2× B.")),
             qPrintable(adaptive_label->text()));
}


// The experts' division is a layout choice: every EP dividing both the ranks and the routed
// experts (tiny, 8 experts on 4 ranks: 1, 2, 4), each with its planned peak, smaller as EP
// grows; choosing one sets runtime.expert_parallel in the window's config and the plan's.
void TestBatchPanel::theExpertsCanBeDividedAmongRanks() {
    RunConfig config = tinyPreset();
    config.runtime.world_size = 4;
    config.train.global_batch_size.reset();
    config.train.micro_batch_size = 2;
    config.train.gradient_accumulation_steps = 2;
    MainWindow window(config, QStringLiteral("tiny"));
    auto* combo = child<QComboBox>(window, "expertParallelCombo");
    QCOMPARE(combo->count(), 3);
    QCOMPARE(combo->itemData(2).toLongLong(), qint64(4));
    QVERIFY2(combo->itemText(2).startsWith(QStringLiteral("EP 4 · 2 a rank · peak ")), qPrintable(combo->itemText(2)));
    QVERIFY(combo->isEnabled());
    combo->setCurrentIndex(2);
    QCOMPARE(window.runConfig().runtime.expert_parallel, int64_t(4));
    RunConfig dense = tinyPreset();
    dense.model.n_dense_layers = dense.model.n_layers;
    MainWindow dense_window(dense, QStringLiteral("dense"));
    QVERIFY(!child<QComboBox>(dense_window, "expertParallelCombo")->isEnabled());
}

// "Measure at checkpoint": off until the run has written a checkpoint, then the critical batch
// of that checkpoint at fixed weights, computed off the GUI thread, beside B.
void TestBatchPanel::aCheckpointsCriticalBatchIsMeasuredOnRequest() {
    QStandardPaths::setTestModeEnabled(true);
    RunConfig config = tinyPreset();
    config.train.steps = 3;
    config.train.eval_every = 0;
    MainWindow window(config, QStringLiteral("tiny"));
    window.show();
    auto* measure = child<QPushButton>(window, "measureCriticalBatchButton");
    QVERIFY(!measure->isEnabled());
    QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
    QTest::mouseClick(child<QPushButton>(window, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, kRunTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(measure->isEnabled(), 10000);
    QSignalSpy measured(window.batchPanel(), &BatchPanel::criticalBatchMeasured);
    QTest::mouseClick(measure, Qt::LeftButton);
    QVERIFY(window.batchPanel()->isMeasuring());
    QVERIFY(!measure->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(measured.count() == 1, kRunTimeoutMs);
    QVERIFY(measured.at(0).at(0).toBool());
    const QString text = child<QLabel>(window, "criticalBatchLabel")->text();
    QVERIFY2(text.startsWith(QStringLiteral("Critical batch of the step-3 checkpoint: ~")) && text.contains(QStringLiteral("× B.")),
             qPrintable(text));
    QVERIFY(measure->isEnabled());
}

// The decoding cache, sized by hand for handSizedCacheConfig at bf16 (2 bytes a number):
// naive: layers x heads x (nope + rope + v) x 2 = 2 x 4 x 20 x 2 = 320 B per token,
//        x 3 rows x 64 positions = 61,440 B = 60.0 KiB;
// absorbed: layers x (kv_lora_rank + rope) x 2 = 2 x 20 x 2 = 80 B per token, x 192 = 15,360 B = 15.0 KiB.
// It is not training memory: the peak per rank does not move with the cache's rows.
void TestBatchPanel::theDecodingCacheIsShownInBothForms() {
    BatchPanel panel;
    panel.setRunConfig(handSizedCacheConfig());
    QCOMPARE(labelText(panel, "inferenceNaivePerTokenLabel"), QStringLiteral("320 B"));
    QCOMPARE(labelText(panel, "inferenceNaiveTotalLabel"), QStringLiteral("60.0 KiB"));
    QCOMPARE(labelText(panel, "inferenceAbsorbedPerTokenLabel"), QStringLiteral("80 B"));
    QCOMPARE(labelText(panel, "inferenceAbsorbedTotalLabel"), QStringLiteral("15.0 KiB"));
    const QString shape = labelText(panel, "inferenceCacheShapeLabel");
    for (const char* part : {"max_batch_size 3 rows", "max_seq_len 64 positions", "2 layers", "bf16"})
        QVERIFY2(shape.contains(QLatin1String(part)), qPrintable(shape));
    // Labelled so the two forms and what the box is not cannot be mistaken.
    auto* box = child<QGroupBox>(panel, "inferenceCacheBox");
    QVERIFY(box);
    QStringList captions;
    for (const QLabel* label : box->findChildren<QLabel*>()) captions << label->text();
    const QString all = captions.join(QLatin1Char('|'));
    QVERIFY2(all.contains(QStringLiteral("per-head keys and values, what the k_cache formula counts")), qPrintable(all));
    QVERIFY2(all.contains(QStringLiteral("latent + shared rotary key, what MLA needs")), qPrintable(all));
    QVERIFY2(box->toolTip().contains(QStringLiteral("not training memory")), qPrintable(box->toolTip()));
    QVERIFY2(box->toolTip().contains(QStringLiteral("not the training micro-batch")), qPrintable(box->toolTip()));

    // Twice the rows: twice the cache in all, the same per token, and the same training peak.
    const QString peak = labelText(panel, "planPeakLabel");
    RunConfig wider = handSizedCacheConfig();
    wider.model.max_batch_size = 6;
    panel.setRunConfig(wider);
    QCOMPARE(labelText(panel, "inferenceNaivePerTokenLabel"), QStringLiteral("320 B"));
    QCOMPARE(labelText(panel, "inferenceNaiveTotalLabel"), QStringLiteral("120 KiB"));
    QCOMPARE(labelText(panel, "inferenceAbsorbedTotalLabel"), QStringLiteral("30.0 KiB"));
    QCOMPARE(labelText(panel, "planPeakLabel"), peak);
    // More heads: only the naive form grows (4 -> 8 heads: 640 B a token); the latent is shared.
    wider.model.n_heads = 8;
    panel.setRunConfig(wider);
    QCOMPARE(labelText(panel, "inferenceNaivePerTokenLabel"), QStringLiteral("640 B"));
    QCOMPARE(labelText(panel, "inferenceAbsorbedPerTokenLabel"), QStringLiteral("80 B"));
}

// The cache's rows typed in Configure reach the batch panel, like every other number there.
void TestBatchPanel::theDecodingCacheFollowsConfigureEdits() {
    MainWindow window(handSizedCacheConfig(), QStringLiteral("hand"));
    QCOMPARE(labelText(window, "inferenceNaiveTotalLabel"), QStringLiteral("60.0 KiB"));
    auto* rows = qobject_cast<QAbstractSpinBox*>(window.configureView()->form()->editor(QStringLiteral("model.max_batch_size")));
    QVERIFY(rows);
    rows->selectAll();
    QTest::keyClicks(rows, QStringLiteral("12"));
    QCOMPARE(window.runConfig().model.max_batch_size, int64_t(12));
    // 320 B x 12 rows x 64 positions = 245,760 B; 80 B x 768 = 61,440 B.
    QCOMPARE(labelText(window, "inferenceNaiveTotalLabel"), QStringLiteral("240 KiB"));
    QCOMPARE(labelText(window, "inferenceAbsorbedTotalLabel"), QStringLiteral("60.0 KiB"));
    QVERIFY2(labelText(window, "inferenceCacheShapeLabel").contains(QStringLiteral("max_batch_size 12 rows")),
             qPrintable(labelText(window, "inferenceCacheShapeLabel")));
}

// DeepSeek-V3 (configs/deepseek/config_671B.json: 61 layers, 128 heads, 128 + 64 + 128 per head,
// a latent of 512, 8 rows of 16,384): what `trainbench-cli plan` prints, "4.8 MiB per token, 610.0
// GiB in all" naive and "68.6 KiB, 8.6 GiB" absorbed, at the workbench's three digits.
void TestBatchPanel::thePublishedModelsCacheMatchesThePlanCommand() {
    RunConfig big;
    for (const ConfigPreset& preset : configPresets())
        if (preset.file == QLatin1String("configs/deepseek/config_671B.json")) big = loadConfigPreset(preset);
    QCOMPARE(big.model.n_layers, int64_t(61));
    BatchPanel panel;
    panel.setRunConfig(big);
    // 61 x 128 x 320 x 2 = 4,997,120 B; x 131,072 = 654,982,512,640 B.
    QCOMPARE(labelText(panel, "inferenceNaivePerTokenLabel"), QStringLiteral("4.77 MiB"));
    QCOMPARE(labelText(panel, "inferenceNaiveTotalLabel"), QStringLiteral("610 GiB"));
    // 61 x 576 x 2 = 70,272 B; x 131,072 = 9,210,691,584 B.
    QCOMPARE(labelText(panel, "inferenceAbsorbedPerTokenLabel"), QStringLiteral("68.6 KiB"));
    QCOMPARE(labelText(panel, "inferenceAbsorbedTotalLabel"), QStringLiteral("8.58 GiB"));
}

// One rank: nothing to launch. Two CPU ranks: threads of one process under Start, and the lines
// that start them as processes, naming the config's file (a placeholder before it is saved);
// the button copies exactly those lines.
void TestBatchPanel::theRanksRowShowsHowToStartThemAsProcesses() {
    BatchPanel panel;
    RunConfig config = builtinTinyConfig();
    config.runtime.device = "cpu";
    config.runtime.world_size = 1;
    panel.setRunConfig(config);
    QCOMPARE(labelText(panel, "launchLabel"), QStringLiteral("one rank"));
    QVERIFY(child<QPushButton>(panel, "copyLaunchButton")->isHidden());
    config.runtime.world_size = 4;
    panel.setRunConfig(config);
    const QStringList lines = labelText(panel, "launchLabel").split(QLatin1Char('\n'));
    QVERIFY2(lines.first().startsWith(QStringLiteral("4 rank threads of one process on the CPU (run, Start). As processes")), qPrintable(lines.first()));
    QVERIFY(lines.contains(QStringLiteral("torchrun --nproc-per-node 4 --no-python trainbench-cli run config.json")));
    QVERIFY(lines.contains(QStringLiteral("On two machines: torchrun --nnodes 2 --node-rank <0 or 1> --nproc-per-node 2 "
                                          "--master-addr <first node> --master-port 29500 --no-python trainbench-cli run "
                                          "config.json")));
    QVERIFY(lines.contains(QStringLiteral("srun --ntasks 4 trainbench-cli run config.json")));
    QVERIFY2(lines.last().contains(QStringLiteral("Save config as")), qPrintable(lines.last()));
    panel.setConfigFile(QStringLiteral("/runs/my model.json"));
    QVERIFY(labelText(panel, "launchLabel")
                .contains(QStringLiteral("torchrun --nproc-per-node 4 --no-python trainbench-cli run '/runs/my model.json'")));
    auto* copy = child<QPushButton>(panel, "copyLaunchButton");
    QVERIFY(!copy->isHidden());
    copy->click();
    const QStringList copied = QGuiApplication::clipboard()->text().split(QLatin1Char('\n'));
    QCOMPARE(copied.size(), 4);  // torchrun, on two machines, Slurm's export and srun
    QCOMPARE(copied.first(), QStringLiteral("torchrun --nproc-per-node 4 --no-python trainbench-cli run '/runs/my model.json'"));
    QCOMPARE(copied.last(), QStringLiteral("srun --ntasks 4 trainbench-cli run '/runs/my model.json'"));
}

QTEST_MAIN(TestBatchPanel)
#include "test_batch_panel.moc"
