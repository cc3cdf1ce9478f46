// Tests the batch panel's plan on the config's target machine: the three tiers' bars are planOnTarget's numbers, the step-time line is describeStepTime's, the advice is adviseOnTarget's (offload or why nothing fits), and offload all is offered at stage 3 only and its note says what Start does.
#include <algorithm>
#include <cmath>

#include <QComboBox>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include "widget_lookup.h"
#include "app/main_window.h"
#include "batch/batch_panel.h"
#include "batch/offload_choice.h"
#include "batch/offload_tiers.h"
#include "batch/plan_wording.h"
#include "batch/step_time_chart.h"
#include "common/display_format.h"
#include "configure/config_presets.h"
#include "configure/configure_view.h"
#include "runs/engine_bridge.h"
#include "tiny_gui_config.h"
#include "trainbench/memory_plan.h"
#include "trainbench/param_count.h"
#include "trainbench/presets.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int kBarSteps = 1000;
// Generous: a run started by mistake may still be building its first batch on a loaded machine.
constexpr int kRunTimeoutMs = 180000;

// The tiny preset on one CPU rank at ZeRO stage 1, its moments offloaded to files in `directory`;
// the target's NVMe given, so the bar does not follow the disk's free space as others write.
RunConfig tinyOnDisk(const QString& directory) {
    RunConfig config = builtinTinyConfig();
    config.runtime.device = "cpu";
    config.runtime.threads = 1;
    config.runtime.world_size = 1;
    config.runtime.zero_stage = 1;
    config.runtime.memory_limit_mb = 1024;
    config.runtime.offload = "optimizer";
    config.runtime.offload_dir = directory.toStdString();
    config.target.nvme_gib = 64;
    return config;
}

// DeepSeek's 16B on one H100 80 GB in bf16 at 4,096 tokens a sequence, as published otherwise.
RunConfig sixteenBOnOneH100() {
    RunConfig config;
    for (const ConfigPreset& preset : configPresets())
        if (preset.file == QLatin1String("configs/deepseek/config_16B.json")) config = loadConfigPreset(preset);
    config.runtime.dtype = "bf16";
    config.train.seq_len = 4096;
    config.target.kind = "h100-80";
    config.target.devices = 1;
    return config;
}

// DeepSeek-V3 (671B) on one H100: nothing fits, even with offload.
RunConfig bigOnOneH100() {
    RunConfig config;
    for (const ConfigPreset& preset : configPresets())
        if (preset.file == QLatin1String("configs/deepseek/config_671B.json")) config = loadConfigPreset(preset);
    config.runtime.dtype = "bf16";
    config.target.kind = "h100-80";
    config.target.devices = 1;
    return config;
}

int barValue(double share) { return static_cast<int>(std::clamp(std::lround(kBarSteps * share), 0L, long(kBarSteps))); }

QString stepTimeOf(const RunConfig& config) {
    const TargetMachine target = resolveTarget(config);
    return QString::fromStdString(
        describeStepTime(predictStepTime(configOnTarget(config, target), planOnTarget(config, target), target)));
}

bool itemEnabled(QComboBox* combo, int index) {
    auto* items = qobject_cast<QStandardItemModel*>(combo->model());
    return items && items->item(index)->isEnabled();
}

QString text(const QWidget& parent, const char* name) {
    auto* label = child<QLabel>(parent, name);
    return label ? label->text() : QStringLiteral("<no %1>").arg(QLatin1String(name));
}

}  // namespace

class TestBatchTiers : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The step times of this machine compared here are those without measured rates: none of
    // a user's settings (MachineFigures) may fill them in.
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void theDiskTierOfCpuRanksIsPlanOnTargets();
    void anH100sHostTierIsPlanOnTargets();
    void theAdvisedLayoutHoldsBf16Weights();
    void theAdviceOffloadsWhenNothingFitsWithout();
    void theAdviceSaysWhyNothingFits();
    void offloadAllIsOfferedAtStageThreeOnly_data();
    void offloadAllIsOfferedAtStageThreeOnly();
    void offloadAllIsAnUndoableChoiceWhoseNoteSaysWhatStartDoes();
    void theGradientsRowSaysWhereTheSumsAre();
    void theBoundariesRowSaysWhereTheWindowKeepsThem();
};

// The gradients row: on the device its bytes per rank; in host memory (under the unit order each
// unit's copied there once finished), or written to offload_dir under the unit order when host
// memory cannot keep them (config_671B on eight H100s of a 2 TB node), where and how much, in
// which dtype, with the reason in its tooltip.
void TestBatchTiers::theGradientsRowSaysWhereTheSumsAre() {
    RunConfig c;
    for (const ConfigPreset& preset : configPresets())
        if (preset.file == QLatin1String("configs/deepseek/config_671B.json")) c = loadConfigPreset(preset);
    QCOMPARE(c.model.dim, int64_t(7168));
    c.train.seq_len = 4096;
    c.train.micro_batch_size = 2;
    c.train.gradient_accumulation_steps = 4;
    c.runtime.world_size = 8;
    c.runtime.zero_stage = 3;
    c.runtime.expert_parallel = 4;
    c.runtime.activation_checkpointing = "full";
    c.runtime.offload = "all";
    c.runtime.offload_dir = kPlannedOffloadDir;
    c.runtime.window_schedule = "auto";
    c.runtime.dtype = "bf16";
    c.target.kind = "h100-80";
    const TargetMachine target = resolveTarget(c);
    const MemoryPlan plan = planOnTarget(c, target);
    QVERIFY(plan.gradients_in_file);
    const auto [text, why] = OffloadTiers::describeGradients(plan, QStringLiteral("unused"));
    QCOMPARE(text, QStringLiteral("on disk (%1)").arg(formatBytes(plan.nvme_gradient_bytes)));
    QVERIFY2(why.contains(QStringLiteral("runtime.offload_dir")) && why.contains(QStringLiteral("unit by unit")), qPrintable(why));
    c.target.host_memory_gib = 4096;  // room for them in host memory: each unit's copied there once
    const MemoryPlan roomy = planOnTarget(c, resolveTarget(c));
    QVERIFY(roomy.gradients_on_host && !roomy.gradients_in_file && roomy.placement.unit_order);
    const auto [host_text, host_why] = OffloadTiers::describeGradients(roomy, QStringLiteral("unused"));
    QCOMPARE(host_text, QStringLiteral("on the host (%1)").arg(formatBytes(roomy.host_gradient_bytes)));
    QVERIFY2(host_why.contains(QStringLiteral("fp32 sums")) && host_why.contains(QStringLiteral("once finished")),
             qPrintable(host_why));
    // bf16 sums: half the bytes, named in the reason.
    c.runtime.gradient_sum_dtype = "bf16";
    const MemoryPlan narrow = planOnTarget(c, resolveTarget(c));
    QVERIFY(narrow.gradients_on_host);
    QCOMPARE(narrow.host_gradient_bytes * 2, roomy.host_gradient_bytes);
    QVERIFY(OffloadTiers::describeGradients(narrow, QStringLiteral("unused")).second.contains(QStringLiteral("bf16 sums")));
    const MemoryPlan small = planOnTarget(builtinTinyConfig(), resolveTarget(builtinTinyConfig()));
    QCOMPARE(OffloadTiers::describeGradients(small, QStringLiteral("1.0 MiB")), (std::pair{QStringLiteral("1.0 MiB"), QString()}));
}

// The unit order's boundaries get a row of their own in the memory breakdown: on the device while
// they fit; on a budget that cannot keep them (small on two CPU ranks at 250 MiB), on disk in
// offload_dir, with how much and why; none under the micro-batch order.
void TestBatchTiers::theBoundariesRowSaysWhereTheWindowKeepsThem() {
    QTemporaryDir scratch;
    QVERIFY(scratch.isValid());
    RunConfig c;
    for (const ConfigPreset& preset : configPresets())
        if (preset.file == QLatin1String("configs/small.json")) c = loadConfigPreset(preset);
    QCOMPARE(c.model.dim, int64_t(512));
    c.runtime.device = "cpu";
    c.runtime.world_size = 2;
    c.runtime.zero_stage = 3;
    c.runtime.offload = "all";
    c.runtime.offload_dir = scratch.path().toStdString();
    c.runtime.activation_checkpointing = "full";
    c.runtime.window_schedule = "unit";
    c.train.gradient_accumulation_steps = 8;
    c.train.micro_batch_size = 2;
    c.train.seq_len = 32;
    c.target.nvme_gib = 64;
    BatchPanel panel;
    auto* row = child<QLabel>(panel, "planBoundariesLabel");
    QVERIFY(row);
    c.runtime.memory_limit_mb = 300;
    panel.setRunConfig(c);
    QCOMPARE(panel.memoryPlan().placement.boundaries, Tier::Device);
    QVERIFY(row->isVisibleTo(&panel));
    QCOMPARE(row->text(), QStringLiteral("%1 on the device").arg(formatBytes(panel.memoryPlan().boundary_bytes)));
    c.runtime.memory_limit_mb = 250;
    panel.setRunConfig(c);
    const MemoryPlan& in_file = panel.memoryPlan();
    QCOMPARE(in_file.placement.boundaries, Tier::File);
    QCOMPARE(row->text(), QStringLiteral("%1 on disk").arg(formatBytes(in_file.nvme_boundary_bytes)));
    QVERIFY2(row->toolTip().contains(QStringLiteral("runtime.offload_dir")) && row->toolTip().contains(QStringLiteral("unit by unit")),
             qPrintable(row->toolTip()));
    QVERIFY2(child<QLabel>(panel, "planHostLabel")->toolTip().contains(QStringLiteral("window's boundaries are written from")),
             qPrintable(child<QLabel>(panel, "planHostLabel")->toolTip()));
    c.runtime.window_schedule = "micro_batch";
    panel.setRunConfig(c);
    QVERIFY(!row->isVisibleTo(&panel));
}

void TestBatchTiers::theDiskTierOfCpuRanksIsPlanOnTargets() {
    QTemporaryDir scratch;
    QVERIFY(scratch.isValid());
    const RunConfig config = tinyOnDisk(scratch.path());
    const TargetMachine target = resolveTarget(config);
    const MemoryPlan plan = planOnTarget(config, target);
    QVERIFY(!target.gpu);
    QVERIFY(plan.nvme_bytes > 0 && plan.host_bytes > 0);
    QCOMPARE(plan.nvme_limit_bytes, int64_t(64) << 30);

    BatchPanel panel;
    panel.setRunConfig(config);
    QCOMPARE(panel.memoryPlan().peak_bytes, plan.peak_bytes);
    QCOMPARE(text(panel, "planTargetLabel"), QString::fromStdString(target.label));
    QCOMPARE(text(panel, "planPeakLabel"), formatBytes(plan.peak_bytes));
    QCOMPARE(text(panel, "planBudgetLabel"), formatBytes(1024 * 1024 * 1024));

    // CPU ranks: host memory is the device's, so the device's bar holds the peak and the staging.
    auto* device_bar = child<QProgressBar>(panel, "planBudgetBar");
    const double device_share = double(plan.peak_bytes + plan.host_bytes) / double(plan.limit_bytes);
    QCOMPARE(device_bar->value(), barValue(device_share));
    QCOMPARE(device_bar->format(), formatShareOfBudget(device_share, QStringLiteral("peak + host")));

    auto* host_bar = child<QProgressBar>(panel, "planHostBar");
    QVERIFY(host_bar->isVisibleTo(&panel));
    QCOMPARE(text(panel, "planHostLabel"), QStringLiteral("%1 (staging)").arg(formatBytes(plan.host_bytes)));
    QCOMPARE(host_bar->value(), barValue(double(plan.host_bytes) / double(plan.limit_bytes)));
    QVERIFY2(host_bar->format().startsWith(QStringLiteral("shares the device's memory")), qPrintable(host_bar->format()));

    auto* disk_bar = child<QProgressBar>(panel, "planDiskBar");
    QVERIFY(disk_bar->isVisibleTo(&panel));
    QCOMPARE(text(panel, "planDiskLabel"), formatBytes(plan.nvme_bytes));
    QCOMPARE(disk_bar->value(), barValue(double(plan.nvme_bytes * plan.ranks_per_node) / double(plan.nvme_limit_bytes)));
    QCOMPARE(disk_bar->format(), OffloadTiers::describeNodeShare(plan.nvme_bytes, plan.ranks_per_node, plan.nvme_limit_bytes));

    QCOMPARE(text(panel, "stepTimeLabel"), stepTimeOf(config));
    QVERIFY2(text(panel, "planVerdictLabel").contains(QStringLiteral("Fits")), qPrintable(text(panel, "planVerdictLabel")));
}

void TestBatchTiers::anH100sHostTierIsPlanOnTargets() {
    // The layout the planner advises for this config (theAdviceOffloadsWhenNothingFitsWithout).
    RunConfig config = sixteenBOnOneH100();
    QCOMPARE(config.model.dim, int64_t(2048));
    config.runtime.zero_stage = 3;
    config.runtime.activation_checkpointing = "full";
    config.runtime.offload = "all";
    const TargetMachine target = resolveTarget(config);
    const MemoryPlan plan = planOnTarget(config, target);
    QVERIFY(target.gpu);
    QVERIFY(plan.fits && plan.host_bytes > 0 && plan.host_limit_bytes > 0);
    QCOMPARE(plan.weight_element_bytes, int64_t(2));  // bf16 units on the device, the master on the host

    BatchPanel panel;
    panel.setRunConfig(config);
    QCOMPARE(text(panel, "planTargetLabel"), QStringLiteral("1 x H100 80 GB"));
    QCOMPARE(text(panel, "planPeakLabel"), formatBytes(plan.peak_bytes));
    QCOMPARE(text(panel, "planWeightsLabel"), formatBytes(plan.weight_bytes) + QStringLiteral(" bf16 (two units)"));
    QCOMPARE(text(panel, "planBudgetLabel"), formatBytes(int64_t(81559) * 1024 * 1024));
    auto* device_bar = child<QProgressBar>(panel, "planBudgetBar");
    QCOMPARE(device_bar->value(), barValue(double(plan.peak_bytes) / double(plan.limit_bytes)));
    QCOMPARE(device_bar->format(), formatShareOfBudget(double(plan.peak_bytes) / double(plan.limit_bytes)));

    auto* host_bar = child<QProgressBar>(panel, "planHostBar");
    QVERIFY(host_bar->isVisibleTo(&panel));
    QCOMPARE(text(panel, "planHostLabel"), formatBytes(plan.host_bytes));
    QCOMPARE(host_bar->value(), barValue(double(plan.host_bytes * plan.ranks_per_node) / double(plan.host_limit_bytes)));
    QCOMPARE(host_bar->format(), OffloadTiers::describeNodeShare(plan.host_bytes, plan.ranks_per_node, plan.host_limit_bytes));
    QCOMPARE(host_bar->format(), QStringLiteral("a node: %1 of 2.00 TiB (%2 %)")
                                     .arg(formatBytes(plan.host_bytes))
                                     .arg(100.0 * double(plan.host_bytes) / double(plan.host_limit_bytes), 0, 'f', 1));
    // No offload_dir: no disk tier.
    QVERIFY(!child<QProgressBar>(panel, "planDiskBar")->isVisibleTo(&panel));

    const QStringList step_lines = text(panel, "stepTimeLabel").split(QLatin1Char('\n'));
    QCOMPARE(step_lines.size(), 2);
    QCOMPARE(step_lines[0], stepTimeOf(config));
    QVERIFY2(step_lines[0].startsWith(QStringLiteral("predicted ")), qPrintable(step_lines[0]));
    QVERIFY2(text(panel, "planVerdictLabel").contains(QStringLiteral("Fits")), qPrintable(text(panel, "planVerdictLabel")));
    // Streamed weights, whole blocks recomputed: the window's order (micro_batch, the default)
    // and the unit order's step beside it, as the planner predicts it.
    RunConfig by_unit = configOnTarget(config, target);
    by_unit.runtime.window_schedule = "unit";
    const MemoryPlan unit_plan = planOnTarget(by_unit, target);
    QVERIFY(unit_plan.placement.unit_order);
    const StepTimePlan unit_time = predictStepTime(by_unit, unit_plan, target);
    QCOMPARE(step_lines[1],
             QStringLiteral("Window by micro-batch; by unit: ") + QString::fromStdString(describeStepTime(unit_time)));
    // The chart: a row for each order, the planned one first, each the planner's own step.
    auto* chart = child<StepTimeChart>(panel, "stepTimeChart");
    QVERIFY(chart->hasStep());
    QVERIFY(chart->sizeHint().height() > 0);
    QCOMPARE(chart->rows().size(), size_t(2));
    QCOMPARE(chart->rows()[0].label, QStringLiteral("by micro-batch (planned)"));
    QCOMPARE(chart->rows()[0].time.step_s, predictStepTime(configOnTarget(config, target), plan, target).step_s);
    QCOMPARE(chart->rows()[1].label, QStringLiteral("by unit"));
    QCOMPARE(chart->rows()[1].time.step_s, unit_time.step_s);
    for (const StepTimeChart::Row& row : chart->rows()) {
        double phases = 0;
        for (const StepTimeChart::Phase& phase : StepTimeChart::phases(row.time, row.accumulation_steps))
            phases += phase.seconds;
        QVERIFY2(std::abs(phases - row.time.step_s) <= 1e-9 * row.time.step_s, qPrintable(row.label));
    }
    // The offload choice's peak is the target's too.
    auto* combo = child<QComboBox>(panel, "offloadCombo");
    QVERIFY2(combo->itemText(OffloadChoice::AllHostMemory).endsWith(formatBytes(plan.peak_bytes)),
             qPrintable(combo->itemText(OffloadChoice::AllHostMemory)));
}

// The layout the planner advises for 16B on one H100 (docs/BENCHMARKS.md): stage 2, offload
// optimizer, m 4: the linear layers' weights in bf16 on the device, the embedding fp32, 2 P + 2 E
// bytes counted by hand, and the panel says so.
void TestBatchTiers::theAdvisedLayoutHoldsBf16Weights() {
    RunConfig config = sixteenBOnOneH100();
    config.runtime.zero_stage = 2;
    config.runtime.activation_checkpointing = "full";
    config.runtime.offload = "optimizer";
    config.train.global_batch_size = 64;
    config.train.micro_batch_size = 4;
    config.train.gradient_accumulation_steps = 16;
    const MemoryPlan plan = planOnTarget(config, resolveTarget(config));
    const ParamCount counts = countParameters(config.model);
    QCOMPARE(plan.weight_element_bytes, int64_t(2));
    QCOMPARE(plan.weight_bytes, 2 * counts.total + 2 * counts.embedding);
    QVERIFY(plan.fits);

    BatchPanel panel;
    panel.setRunConfig(config);
    QCOMPARE(text(panel, "planWeightsLabel"), formatBytes(plan.weight_bytes) + QStringLiteral(" (bf16)"));
    QVERIFY(child<QLabel>(panel, "planWeightsLabel")->toolTip().contains(QStringLiteral("fp32 master")));
}

void TestBatchTiers::theAdviceOffloadsWhenNothingFitsWithout() {
    const RunConfig config = sixteenBOnOneH100();
    const TargetMachine target = resolveTarget(config);
    const TargetAdvice advice = adviseOnTarget(config, target);
    QVERIFY(advice.offloaded);
    const MemoryPlan plan = planOnTarget(config, target);
    QVERIFY(!plan.fits);

    BatchPanel panel;
    panel.setRunConfig(config);
    const QString shown = text(panel, "layoutAdviceLabel");
    QCOMPARE(shown, describeTargetAdvice(advice, config, target));
    // The offloaded layout with what it needs of each tier and its step.
    const MemoryPlan& advised = advice.layout.cheapest_plan;
    const QString advised_time = QString::fromStdString(describeStepTime(
        predictStepTime(withLayout(configOnTarget(config, target), advice.layout.cheapest), advised, target)));
    QVERIFY2(shown.contains(QStringLiteral("With offload")), qPrintable(shown));
    QVERIFY2(shown.contains(QStringLiteral("peak %1").arg(formatBytes(advised.peak_bytes))), qPrintable(shown));
    QVERIFY2(shown.contains(QStringLiteral("host memory %1 a node").arg(formatBytes(advised.host_bytes * advised.ranks_per_node))),
             qPrintable(shown));
    QVERIFY2(shown.contains(advised_time), qPrintable(shown));
    // Nothing is offloaded yet, but the host tier the advice needs is shown with what a node has.
    auto* host_bar = child<QProgressBar>(panel, "planHostBar");
    QVERIFY(host_bar->isVisibleTo(&panel));
    QCOMPARE(text(panel, "planHostLabel"), QStringLiteral("none offloaded"));
    QCOMPARE(host_bar->format(), OffloadTiers::describeNodeShare(0, plan.ranks_per_node, plan.host_limit_bytes));
    QCOMPARE(text(panel, "stepTimeLabel"), stepTimeOf(config));
    QVERIFY2(text(panel, "planVerdictLabel").contains(QStringLiteral("Does not fit")), qPrintable(text(panel, "planVerdictLabel")));
}

void TestBatchTiers::theAdviceSaysWhyNothingFits() {
    const RunConfig config = bigOnOneH100();
    QCOMPARE(config.model.dim, int64_t(7168));
    const TargetMachine target = resolveTarget(config);
    const TargetAdvice advice = adviseOnTarget(config, target);
    QVERIFY(!advice.offloaded && advice.layout.cheapest.micro_batch_size == 0 && !advice.why_none.empty());

    BatchPanel panel;
    panel.setRunConfig(config);
    const QString shown = text(panel, "layoutAdviceLabel");
    QCOMPARE(shown, describeTargetAdvice(advice, config, target));
    QVERIFY2(shown.contains(QString::fromStdString(advice.why_none)), qPrintable(shown));
    // A wrapped label: the whole sentence stays readable in the narrow column.
    QVERIFY(child<QLabel>(panel, "layoutAdviceLabel")->wordWrap());
}

void TestBatchTiers::offloadAllIsOfferedAtStageThreeOnly_data() {
    QTest::addColumn<int>("zero_stage");
    for (int stage = 0; stage <= 3; ++stage) QTest::newRow(qPrintable(QStringLiteral("stage %1").arg(stage))) << stage;
}

void TestBatchTiers::offloadAllIsOfferedAtStageThreeOnly() {
    QFETCH(int, zero_stage);
    RunConfig config = builtinTinyConfig();
    config.runtime.device = "cpu";
    config.runtime.world_size = 2;
    config.runtime.zero_stage = zero_stage;
    BatchPanel panel;
    panel.setRunConfig(config);
    auto* combo = child<QComboBox>(panel, "offloadCombo");
    QVERIFY(combo);
    QCOMPARE(combo->count(), 5);
    const bool offered = zero_stage == 3;
    QCOMPARE(itemEnabled(combo, OffloadChoice::AllHostMemory), offered);
    QCOMPARE(itemEnabled(combo, OffloadChoice::AllDisk), offered);
    const QString tip = combo->itemData(OffloadChoice::AllHostMemory, Qt::ToolTipRole).toString();
    if (offered) {
        // The peak of the shard off the device, on the config's target.
        RunConfig all = config;
        all.runtime.offload = "all";
        const int64_t peak = planOnTarget(all, resolveTarget(all)).peak_bytes;
        QVERIFY2(combo->itemText(OffloadChoice::AllHostMemory).endsWith(formatBytes(peak)),
                 qPrintable(combo->itemText(OffloadChoice::AllHostMemory)));
        QVERIFY2(tip.contains(QStringLiteral("each unit's brought to the device")), qPrintable(tip));
    } else {
        QVERIFY2(tip.contains(QStringLiteral("needs ZeRO stage 3")), qPrintable(tip));
    }
}

void TestBatchTiers::offloadAllIsAnUndoableChoiceWhoseNoteSaysWhatStartDoes() {
    RunConfig config = tinyGuiConfig();
    config.runtime.zero_stage = 3;
    MainWindow window(config, QStringLiteral("tiny"));
    auto* combo = child<QComboBox>(window, "offloadCombo");
    QVERIFY(combo && itemEnabled(combo, OffloadChoice::AllHostMemory));
    QUndoStack* undo = window.configureView()->undoStack();
    const int steps = undo->count();
    combo->setCurrentIndex(OffloadChoice::AllHostMemory);
    QCOMPARE(window.runConfig().runtime.offload, std::string("all"));
    QCOMPARE(window.runConfig().runtime.offload_dir, std::string());
    QCOMPARE(undo->count(), steps + 1);
    // The engine validates it, and the note (on the batch tab, which need not be the current one)
    // has no refusal to tell.
    QVERIFY(window.configureView()->isValid());
    auto* note = child<QLabel>(window, "offloadNoteLabel");
    QVERIFY2(note->isHidden() || note->text().isEmpty(), qPrintable(note->text()));

    // Start: CPU ranks train offload all (the weights' shards in the host account), no refusal.
    QSignalSpy failed(window.bridge(), &EngineBridge::startFailed);
    auto* start = child<QPushButton>(window, "startButton");
    QVERIFY(start->isEnabled());
    QTest::mouseClick(start, Qt::LeftButton);
    QCOMPARE(failed.count(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(window.bridge()->isLive(), kRunTimeoutMs);
    window.stopRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window.bridge()->isLive(), kRunTimeoutMs);

    undo->undo();
    QCOMPARE(window.runConfig().runtime.offload, std::string("none"));
    QCOMPARE(combo->currentIndex(), int(OffloadChoice::OnDevice));
}

QTEST_MAIN(TestBatchTiers)
#include "test_batch_tiers.moc"
