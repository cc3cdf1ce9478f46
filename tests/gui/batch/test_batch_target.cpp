// Tests the batch panel's target machine: the picker's edit is one undoable edit of the target section (the Configure form and the side panel follow), every term the panel shows is planOnTarget's, "Apply what fits" sets withLayout of the advice's cheapest layout as one undo, and the device-count dialog's rows are adviseOnTarget's at each count.
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTest>
#include <QUndoStack>

#include "widget_lookup.h"
#include "app/main_window.h"
#include "batch/batch_panel.h"
#include "batch/device_count_dialog.h"
#include "batch/device_count_table.h"
#include "batch/plan_wording.h"
#include "batch/what_fits_edit.h"
#include "common/display_format.h"
#include "configure/config_presets.h"
#include "configure/configure_view.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

RunConfig preset(const char* file) {
    for (const ConfigPreset& one : configPresets())
        if (one.file == QLatin1String(file)) return loadConfigPreset(one);
    qFatal("no preset %s", file);
    return {};
}

// DeepSeek-V2-Lite (16B) as a user plans it on a laptop: bf16, 4,096 tokens a sequence, this machine's CPU.
RunConfig sixteenB() {
    RunConfig config = preset("configs/deepseek/config_16B.json");
    config.runtime.dtype = "bf16";
    config.train.seq_len = 4096;
    return config;
}

std::string json(const RunConfig& config) { return runConfigToJson(config, -1); }

// The config's issues outside its data section (a published model's vocabulary is beyond the
// synthetic source, which says nothing about the layout).
QStringList runtimeIssues(const RunConfig& config) {
    QStringList issues;
    for (const ConfigIssue& issue : validateRunConfig(config))
        if (!isDataIssue(issue)) issues << QString::fromStdString(issue.message);
    return issues;
}

int kindIndex(QComboBox* combo, const char* kind) { return combo->findData(QString::fromLatin1(kind)); }

}  // namespace

class TestBatchTarget : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void pickerEditsTheTargetAsOneUndoableStep();
    void theFormAndThePickerShowOneTarget();
    void everyTermShownIsPlanOnTarget();
    void applyWhatFitsIsWithLayoutAndOneUndo();
    void applyWhatFitsTakesTheTargetsRanksWhenEpNeedsThem();
    void applyWhatFitsOnDiskLeavesTheDirectoryToTheUser();
    void deviceCountRowsAreAdviseOnTargetAtEachCount();
    void theExplorerAndStartSayTheyAreAboutThisMachine();
};

void TestBatchTarget::pickerEditsTheTargetAsOneUndoableStep() {
    const RunConfig start = sixteenB();
    MainWindow window(start, QStringLiteral("config_16B.json"));
    auto* kind = child<QComboBox>(window, "targetKindCombo");
    auto* devices = child<QSpinBox>(window, "targetDevicesSpin");
    QUndoStack* undo = window.configureView()->undoStack();
    QCOMPARE(kind->currentData().toString(), QStringLiteral("here"));
    QVERIFY(!devices->isEnabled());  // this machine: runtime's ranks
    QVERIFY(!child<QLabel>(window, "targetLabel")->isVisibleTo(&window));

    const int steps = undo->count();
    kind->setCurrentIndex(kindIndex(kind, "h100-80"));
    QCOMPARE(undo->count(), steps + 1);
    QCOMPARE(window.runConfig().target.kind, std::string("h100-80"));
    QCOMPARE(window.runConfig().target.devices, int64_t(8));  // one node of the kind
    QCOMPARE(window.batchPanel()->target().label, std::string("8 x H100 80 GB"));
    QCOMPARE(child<QLabel>(window, "targetLabel")->text(), QStringLiteral("8 x H100 80 GB"));
    QVERIFY(child<QLabel>(window, "targetLabel")->isVisibleTo(&window));
    QVERIFY(devices->isEnabled());

    devices->setValue(4);
    QCOMPARE(undo->count(), steps + 2);
    QCOMPARE(window.runConfig().target.devices, int64_t(4));
    QCOMPARE(window.batchPanel()->target().devices, int64_t(4));

    undo->undo();
    QCOMPARE(window.runConfig().target.devices, int64_t(8));
    QCOMPARE(devices->value(), 8);
    undo->undo();
    QCOMPARE(json(window.runConfig()), json(start));
    QCOMPARE(kind->currentData().toString(), QStringLiteral("here"));
    QCOMPARE(json(window.batchPanel()->runConfig()), json(start));

    // Custom: a memory of its own, 80 GiB unless the section names one.
    kind->setCurrentIndex(kindIndex(kind, "custom"));
    QCOMPARE(window.runConfig().target.kind, std::string("custom"));
    QCOMPARE(window.runConfig().target.device_memory_gib, 80.0);
    auto* memory = child<QDoubleSpinBox>(window, "targetMemorySpin");
    QVERIFY(memory->isEnabled());
    memory->setValue(141);
    QCOMPARE(window.runConfig().target.device_memory_gib, 141.0);
    QCOMPARE(window.batchPanel()->target().device_memory_bytes, int64_t(141) << 30);
}

void TestBatchTarget::theFormAndThePickerShowOneTarget() {
    MainWindow window(sixteenB(), QStringLiteral("config_16B.json"));
    auto* kind = child<QComboBox>(window, "targetKindCombo");
    kind->setCurrentIndex(kindIndex(kind, "a100-40"));
    auto* form_kind = window.configureView()->findChild<QComboBox*>(QStringLiteral("target.kind"));
    QVERIFY(form_kind);
    QCOMPARE(form_kind->currentText(), QStringLiteral("a100-40"));
    QCOMPARE(window.configureView()->config().target.kind, std::string("a100-40"));

    // The form's edit reaches the picker: one config.
    const int h200 = form_kind->findText(QStringLiteral("h200-141"));
    QVERIFY(h200 >= 0);
    form_kind->setCurrentIndex(h200);
    Q_EMIT form_kind->activated(h200);
    QTRY_COMPARE(window.runConfig().target.kind, std::string("h200-141"));
    QCOMPARE(kind->currentData().toString(), QStringLiteral("h200-141"));
    QCOMPARE(window.batchPanel()->target().label, std::string("8 x H200 141 GB"));
}

void TestBatchTarget::everyTermShownIsPlanOnTarget() {
    RunConfig config = sixteenB();
    config.target.kind = "h100-80";
    config.target.devices = 8;
    MainWindow window(config, QStringLiteral("config_16B.json"));
    const BatchPanel* panel = window.batchPanel();
    const TargetMachine target = resolveTarget(config);
    const MemoryPlan plan = planOnTarget(config, target);
    QCOMPARE(memoryPlanToJson(panel->memoryPlan()), memoryPlanToJson(plan));
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), formatBytes(plan.peak_bytes));
    QCOMPARE(child<QLabel>(window, "planActivationsLabel")->text(), formatBytes(plan.activation_bytes));
    QVERIFY(plan.head_chunk_tokens > 0);  // the default: the head in chunks
    QCOMPARE(child<QLabel>(window, "planLogitsLabel")->text(),
             QStringLiteral("%1 (chunks of %2 tokens)").arg(formatBytes(plan.logits_bytes)).arg(plan.head_chunk_tokens));
    QCOMPARE(child<QLabel>(window, "planWeightsLabel")->text(), formatBytes(plan.weight_bytes));
    QCOMPARE(child<QLabel>(window, "planGradientsLabel")->text(), formatBytes(plan.gradient_bytes));
    QCOMPARE(child<QLabel>(window, "planOptimizerLabel")->text(), formatBytes(plan.optimizer_bytes));
    QVERIFY(child<QLabel>(window, "planCollectivesLabel")->text().startsWith(formatBytes(plan.bytes_sent_per_step)));
    QVERIFY(child<QLabel>(window, "planCollectivesLabel")->text().contains(QString::number(plan.collectives_per_step)));
    const StepTimePlan time = predictStepTime(configOnTarget(config, target), plan, target);
    QCOMPARE(child<QLabel>(window, "stepTimeLabel")->text(), QString::fromStdString(describeStepTime(time)));
    const TargetAdvice advice = adviseOnTarget(config, target);
    QCOMPARE(child<QLabel>(window, "layoutAdviceLabel")->text(), describeTargetAdvice(advice, config, target));
    QCOMPARE(layoutAdviceToJson(panel->targetAdvice().layout), layoutAdviceToJson(advice.layout));
    QVERIFY(child<QLabel>(window, "planTargetLabel")->text().startsWith(QStringLiteral("8 x H100 80 GB")));
}

void TestBatchTarget::applyWhatFitsIsWithLayoutAndOneUndo() {
    RunConfig config = sixteenB();
    config.runtime.world_size = 8;  // the target's ranks: the layout applies as the advice plans it
    config.target.kind = "h100-80";
    config.target.devices = 8;
    MainWindow window(config, QStringLiteral("config_16B.json"));
    const TargetAdvice advice = adviseOnTarget(config, resolveTarget(config));
    QVERIFY(advice.layout.cheapest.micro_batch_size > 0);
    const RunConfig expected = withLayout(config, advice.layout.cheapest);
    QVERIFY(json(expected) != json(config));

    auto* apply = child<QPushButton>(window, "applyWhatFitsButton");
    QVERIFY(apply->isEnabled());
    QUndoStack* undo = window.configureView()->undoStack();
    const int steps = undo->count();
    QTest::mouseClick(apply, Qt::LeftButton);
    QCOMPARE(undo->count(), steps + 1);
    QCOMPARE(json(window.runConfig()), json(expected));
    QCOMPARE(json(window.configureView()->config()), json(expected));
    QCOMPARE(json(window.batchPanel()->runConfig()), json(expected));
    // Applied: nothing left to apply.
    QVERIFY(!apply->isEnabled());
    QCOMPARE(window.batchPanel()->whatFits().applies, false);

    undo->undo();
    QCOMPARE(json(window.runConfig()), json(config));
    QCOMPARE(json(window.batchPanel()->runConfig()), json(config));
    QVERIFY(apply->isEnabled());
}

void TestBatchTarget::applyWhatFitsTakesTheTargetsRanksWhenEpNeedsThem() {
    RunConfig config = sixteenB();  // one CPU rank; the plan is for 8 GPUs
    config.target.kind = "h100-80";
    config.target.devices = 8;
    MainWindow window(config, QStringLiteral("config_16B.json"));
    const TargetAdvice advice = adviseOnTarget(config, resolveTarget(config));
    QVERIFY2(advice.layout.cheapest.expert_parallel > 1, "16B on 8 x H100: expert parallelism fits first");
    RunConfig ranked = config;
    ranked.runtime.world_size = 8;
    const RunConfig expected = withLayout(ranked, advice.layout.cheapest);
    QVERIFY(!runtimeIssues(withLayout(config, advice.layout.cheapest)).isEmpty());
    QCOMPARE(runtimeIssues(expected), QStringList());

    QUndoStack* undo = window.configureView()->undoStack();
    const int steps = undo->count();
    QVERIFY(child<QLabel>(window, "whatFitsNoteLabel")->text().contains(QStringLiteral("runtime.world_size becomes 8")));
    QVERIFY(window.batchPanel()->applyWhatFits());
    QCOMPARE(undo->count(), steps + 1);
    QCOMPARE(json(window.runConfig()), json(expected));
    QCOMPARE(runtimeIssues(window.runConfig()), QStringList());
    undo->undo();
    QCOMPARE(json(window.runConfig()), json(config));
}

void TestBatchTarget::applyWhatFitsOnDiskLeavesTheDirectoryToTheUser() {
    // DeepSeek-V2 (236B) on four H100s: only offload all to NVMe fits (docs/BENCHMARKS.md).
    RunConfig config = preset("configs/deepseek/config_236B.json");
    config.runtime.dtype = "bf16";
    config.train.seq_len = 4096;
    config.runtime.world_size = 4;
    config.train.gradient_accumulation_steps = 16;
    config.target.kind = "h100-80";
    config.target.devices = 4;
    MainWindow window(config, QStringLiteral("config_236B.json"));
    const TargetAdvice& advice = window.batchPanel()->targetAdvice();
    QVERIFY(advice.offloaded);
    QVERIFY(advice.layout.cheapest.nvme);
    QVERIFY(window.batchPanel()->applyWhatFits());
    QCOMPARE(json(window.runConfig()), json(withLayout(config, advice.layout.cheapest)));
    QCOMPARE(window.runConfig().runtime.offload_dir, std::string(kPlannedOffloadDir));
    auto* note = child<QLabel>(window, "whatFitsNoteLabel");
    QVERIFY(note->text().contains(QStringLiteral("Choose their directory")));
    QVERIFY(!note->isHidden());
}

void TestBatchTarget::deviceCountRowsAreAdviseOnTargetAtEachCount() {
    RunConfig config = sixteenB();
    config.target.kind = "h100-80";
    config.target.devices = 8;
    MainWindow window(config, QStringLiteral("config_16B.json"));
    DeviceCountDialog* dialog = window.batchPanel()->showDeviceCounts();
    QVERIFY(dialog->isVisible());
    if (qEnvironmentVariableIsSet("TRAINBENCH_TEST_GRAB")) dialog->grab().save(qEnvironmentVariable("TRAINBENCH_TEST_GRAB"));
    const DeviceCountModel* counts = dialog->countModel();
    QCOMPARE(counts->rowCount(), int(tableDeviceCounts().size()));
    for (int row = 0; row < counts->rowCount(); ++row) {
        const int64_t devices = tableDeviceCounts()[size_t(row)];
        RunConfig counted = config;
        counted.target.devices = devices;
        const TargetMachine target = resolveTarget(counted);
        const TargetAdvice advice = adviseOnTarget(counted, target);
        const DeviceCountRow& shown = counts->rows()[size_t(row)];
        QCOMPARE(shown.devices, devices);
        QCOMPARE(layoutAdviceToJson(shown.advice.layout), layoutAdviceToJson(advice.layout));
        QCOMPARE(shown.advice.offloaded, advice.offloaded);
        const auto cell = [&](DeviceCountModel::Column column) {
            return counts->index(row, int(column) - 1).data().toString();  // no Config column
        };
        QCOMPARE(cell(DeviceCountModel::Devices), QString::number(devices));
        if (advice.layout.cheapest.micro_batch_size > 0) {
            QCOMPARE(cell(DeviceCountModel::Peak), formatBytes(advice.layout.cheapest_plan.peak_bytes));
            QCOMPARE(cell(DeviceCountModel::Split), QStringLiteral("%1 × %2")
                                                        .arg(advice.layout.cheapest.micro_batch_size)
                                                        .arg(advice.layout.cheapest_plan.gradient_accumulation_steps));
            const StepTimePlan time = predictStepTime(withLayout(configOnTarget(counted, target), advice.layout.cheapest),
                                                      advice.layout.cheapest_plan, target);
            QCOMPARE(shown.time.step_s, time.step_s);
        } else {
            QVERIFY(cell(DeviceCountModel::Layout).startsWith(QStringLiteral("none")));
        }
    }
    // The panel's own count is a row of the table, and says what the panel says.
    QCOMPARE(layoutAdviceToJson(counts->rows()[3].advice.layout),
             layoutAdviceToJson(window.batchPanel()->targetAdvice().layout));

    // The three claims: 16B on 1, 236B on 4, 671B on 8 GPUs of 80 GB, each answered by the same code.
    const DeviceCountModel* claims = dialog->claimsModel();
    QCOMPARE(claims->rowCount(), 3);
    const QStringList names{QStringLiteral("config_16B"), QStringLiteral("config_236B"), QStringLiteral("config_671B")};
    const std::vector<int64_t> devices{1, 4, 8};
    for (int row = 0; row < 3; ++row) {
        const DeviceCountRow& shown = claims->rows()[size_t(row)];
        QCOMPARE(claims->index(row, DeviceCountModel::Config).data().toString(), names[row]);
        QCOMPARE(shown.devices, devices[size_t(row)]);
        const PublishedConfig published{names[row], preset(qPrintable(QStringLiteral("configs/deepseek/%1.json").arg(names[row]))),
                                        devices[size_t(row)]};
        const RunConfig claim = claimConfig(published);
        QCOMPARE(claim.train.seq_len, int64_t(4096));
        QCOMPARE(claim.globalBatch(), int64_t(64));
        const TargetAdvice advice = adviseOnTarget(claim, resolveTarget(claim));
        QCOMPARE(layoutAdviceToJson(shown.advice.layout), layoutAdviceToJson(advice.layout));
        QVERIFY(!claims->index(row, DeviceCountModel::Layout).data().toString().isEmpty());
        QVERIFY(child<QLabel>(*dialog, "claimsAnswerLabel")->text().contains(describeClaim(shown)));
    }
}

// The plan follows the target; the explorer measures, and Start trains, on this machine: both
// say so once the target is another machine, and say nothing of it while it is this one.
void TestBatchTarget::theExplorerAndStartSayTheyAreAboutThisMachine() {
    RunConfig config = preset("configs/tiny.json");
    MainWindow here(config, QStringLiteral("tiny"));
    const QString about = QStringLiteral("this machine");
    QVERIFY(!child<QLabel>(here, "explorerStatusLabel")->text().contains(about));
    QVERIFY(!child<QLabel>(here, "statusLabel")->text().contains(about));
    config.target.kind = "h100-80";
    config.target.devices = 8;
    MainWindow planned(config, QStringLiteral("tiny"));
    const QString explorer = child<QLabel>(planned, "explorerStatusLabel")->text();
    QVERIFY2(explorer.contains(QStringLiteral("It measures this machine (runtime: cpu, 1 rank(s))")), qPrintable(explorer));
    const QString status = child<QLabel>(planned, "statusLabel")->text();
    QVERIFY2(status.contains(QStringLiteral("It trains on this machine (runtime), not on the planned target")),
             qPrintable(status));
}

QTEST_MAIN(TestBatchTarget)
#include "test_batch_target.moc"
