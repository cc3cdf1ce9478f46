// Tests the batch panel's offload choice: one undoable edit of runtime.offload (and offload_dir), the device peak without the AdamW moments, the host and disk rows, and the refusal at ZeRO stage 0 (a CUDA device offloads too: the engine's host step).
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include "widget_lookup.h"
#include "batch/batch_panel.h"
#include "batch/offload_choice.h"
#include "common/config_edit.h"
#include "common/display_format.h"
#include "configure/configure_view.h"
#include "trainbench/memory_plan.h"
#include "trainbench/param_count.h"
#include "trainbench/presets.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// AdamW keeps two fp32 moments per parameter: on one rank at stage 1 the whole model's.
constexpr int64_t kMomentBytesPerParameter = 2 * 4;

// The tiny preset on one CPU rank at ZeRO stage 1 (on one rank the same arithmetic as stage 0).
RunConfig stageOneConfig() {
    RunConfig config = builtinTinyConfig();
    config.runtime.device = "cpu";
    config.runtime.threads = 1;
    config.runtime.world_size = 1;
    config.runtime.zero_stage = 1;
    return config;
}

// The window's part, as MainWindow::applyEdit does it: the panel's edit becomes the owner's
// config and one undoable step of the Configure view; an undo hands the panel the config back.
struct Owner {
    explicit Owner(const RunConfig& start) : config(start), view(start, QStringLiteral("tiny")) {
        panel.setRunConfig(config);
        QObject::connect(&panel, &BatchPanel::configEditRequested, &panel, [this](const ConfigEdit& edit) {
            config = withEdit(config, edit);
            view.recordWindowEdit(config, edit.description);
        });
        QObject::connect(&view, &ConfigureView::configEdited, &panel, [this](const RunConfig& edited, const QString&) {
            config = edited;
            panel.setRunConfig(config);
        });
    }

    RunConfig config;
    ConfigureView view;
    BatchPanel panel;
};

bool itemEnabled(QComboBox* combo, int index) {
    auto* items = qobject_cast<QStandardItemModel*>(combo->model());
    return items && items->item(index)->isEnabled();
}

}  // namespace

class TestBatchOffload : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hostMemoryIsOneUndoableEditThatTakesTheMomentsOutOfThePeak();
    void theDiskTierEditsTheOffloadDirectory();
    void offloadIsRefusedAtStageZero_data();
    void offloadIsRefusedAtStageZero();
};

void TestBatchOffload::hostMemoryIsOneUndoableEditThatTakesTheMomentsOutOfThePeak() {
    const RunConfig start = stageOneConfig();
    Owner owner(start);
    BatchPanel& panel = owner.panel;
    auto* combo = child<QComboBox>(panel, "offloadCombo");
    auto* peak = child<QLabel>(panel, "planPeakLabel");
    auto* moments = child<QLabel>(panel, "planOptimizerLabel");
    auto* host = child<QLabel>(panel, "planHostLabel");
    QVERIFY(combo && peak && moments && host);

    // The moments, from the parameter count (not from the planner), and the peak they are in.
    const int64_t moment_bytes = kMomentBytesPerParameter * countParameters(start.model).total;
    const int64_t peak_on_device = planMemory(start, BatchPanel::memoryBudgetBytes(start)).peak_bytes;
    const QString peak_offloaded = formatBytes(peak_on_device - moment_bytes);
    QVERIFY(moment_bytes > 0);
    QVERIFY2(formatBytes(peak_on_device) != peak_offloaded, "the moments must show in the peak's text");

    QCOMPARE(combo->currentIndex(), int(OffloadChoice::OnDevice));
    QVERIFY(combo->isEnabled());
    QVERIFY(itemEnabled(combo, OffloadChoice::HostMemory));
    QCOMPARE(peak->text(), formatBytes(peak_on_device));
    QVERIFY(!host->isVisibleTo(&panel));
    // Each choice names the device peak it would plan.
    QVERIFY2(combo->itemText(OffloadChoice::OnDevice).endsWith(QStringLiteral("peak %1").arg(formatBytes(peak_on_device))),
             qPrintable(combo->itemText(OffloadChoice::OnDevice)));
    QVERIFY2(combo->itemText(OffloadChoice::HostMemory).endsWith(QStringLiteral("peak %1").arg(peak_offloaded)),
             qPrintable(combo->itemText(OffloadChoice::HostMemory)));
    QVERIFY2(combo->itemText(OffloadChoice::Disk).endsWith(QStringLiteral("peak %1").arg(peak_offloaded)),
             qPrintable(combo->itemText(OffloadChoice::Disk)));

    QSignalSpy requested(&panel, &BatchPanel::configEditRequested);
    QUndoStack* undo = owner.view.undoStack();
    const int steps_before = undo->count();
    const RunConfig before = owner.config;
    combo->setCurrentIndex(OffloadChoice::HostMemory);
    QCOMPARE(requested.count(), 1);
    // The edit asks for the moments in host memory: runtime.offload, and no directory.
    const RunConfig asked = withEdit(before, requested.at(0).at(0).value<ConfigEdit>());
    QCOMPARE(asked.runtime.offload, std::string("optimizer"));
    QCOMPARE(asked.runtime.offload_dir, std::string());
    QCOMPARE(owner.config.runtime.offload, std::string("optimizer"));
    QCOMPARE(owner.view.config().runtime.offload, std::string("optimizer"));
    QCOMPARE(panel.runConfig().runtime.offload, std::string("optimizer"));
    QCOMPARE(undo->count(), steps_before + 1);
    // The engine takes the config as it is now.
    QVERIFY(owner.view.isValid());

    // The device's peak without the moments; they wait in host memory.
    QCOMPARE(peak->text(), peak_offloaded);
    QCOMPARE(moments->text(), QStringLiteral("%1 in host memory").arg(formatBytes(moment_bytes)));
    QVERIFY(host->isVisibleTo(&panel));
    QCOMPARE(host->text(), formatBytes(moment_bytes));
    QVERIFY(!child<QLabel>(panel, "planDiskLabel")->isVisibleTo(&panel));

    undo->undo();
    QCOMPARE(owner.config.runtime.offload, std::string("none"));
    QCOMPARE(panel.runConfig().runtime.offload, std::string("none"));
    QCOMPARE(combo->currentIndex(), int(OffloadChoice::OnDevice));
    QCOMPARE(peak->text(), formatBytes(peak_on_device));
    QVERIFY(!host->isVisibleTo(&panel));
    // The undo came from the owner, not from a choice: nothing was requested again.
    QCOMPARE(requested.count(), 1);
}

void TestBatchOffload::theDiskTierEditsTheOffloadDirectory() {
    const RunConfig start = stageOneConfig();
    Owner owner(start);
    BatchPanel& panel = owner.panel;
    auto* combo = child<QComboBox>(panel, "offloadCombo");
    auto* directory = child<QLineEdit>(panel, "offloadDirEdit");
    QVERIFY(combo && directory);
    QVERIFY(!directory->isVisibleTo(&panel));
    const int64_t moment_bytes = kMomentBytesPerParameter * countParameters(start.model).total;

    combo->setCurrentIndex(OffloadChoice::Disk);
    QCOMPARE(owner.config.runtime.offload, std::string("optimizer"));
    QVERIFY(!owner.config.runtime.offload_dir.empty());
    QVERIFY(directory->isVisibleTo(&panel));
    QCOMPARE(directory->text(), QString::fromStdString(owner.config.runtime.offload_dir));

    // A directory typed there is runtime.offload_dir, one more step.
    QTemporaryDir scratch;
    QVERIFY(scratch.isValid());
    QUndoStack* undo = owner.view.undoStack();
    const int steps_before = undo->count();
    directory->setText(scratch.path());
    Q_EMIT directory->editingFinished();
    QCOMPARE(owner.config.runtime.offload_dir, scratch.path().toStdString());
    QCOMPARE(undo->count(), steps_before + 1);

    QCOMPARE(child<QLabel>(panel, "planOptimizerLabel")->text(), QStringLiteral("%1 on disk").arg(formatBytes(moment_bytes)));
    auto* disk = child<QLabel>(panel, "planDiskLabel");
    QVERIFY(disk->isVisibleTo(&panel));
    QCOMPARE(disk->text(), formatBytes(moment_bytes));
    // In host memory only the two staging slots a bucket is read into.
    QCOMPARE(child<QLabel>(panel, "planHostLabel")->text(),
             QStringLiteral("%1 (staging)").arg(formatBytes(panel.memoryPlan().host_bytes)));

    undo->undo();
    QCOMPARE(directory->text(), QString::fromStdString(owner.config.runtime.offload_dir));
    QVERIFY(owner.config.runtime.offload_dir != scratch.path().toStdString());
}

void TestBatchOffload::offloadIsRefusedAtStageZero_data() {
    QTest::addColumn<int>("zero_stage");
    QTest::addColumn<QString>("device");
    QTest::addColumn<QString>("reason");
    QTest::newRow("stage 0") << 0 << QStringLiteral("cpu") << QStringLiteral("needs ZeRO stage 1 or more");
}

void TestBatchOffload::offloadIsRefusedAtStageZero() {
    QFETCH(int, zero_stage);
    QFETCH(QString, device);
    QFETCH(QString, reason);
    RunConfig config = stageOneConfig();
    config.runtime.zero_stage = zero_stage;
    config.runtime.device = device.toStdString();
    config.runtime.memory_limit_mb = 1024;  // no GPU asked for its size
    BatchPanel panel;
    panel.setRunConfig(config);
    auto* combo = child<QComboBox>(panel, "offloadCombo");
    QVERIFY(combo);
    QVERIFY(!combo->isEnabled());
    QVERIFY(!itemEnabled(combo, OffloadChoice::HostMemory));
    QVERIFY(!itemEnabled(combo, OffloadChoice::Disk));
    QVERIFY2(combo->toolTip().contains(reason), qPrintable(combo->toolTip()));
    QVERIFY2(combo->itemData(OffloadChoice::HostMemory, Qt::ToolTipRole).toString().contains(reason),
             qPrintable(combo->itemData(OffloadChoice::HostMemory, Qt::ToolTipRole).toString()));

    // A config that offloads anyway keeps "none" within reach, and says why it should.
    config.runtime.offload = "optimizer";
    panel.setRunConfig(config);
    QVERIFY(combo->isEnabled());
    QVERIFY(itemEnabled(combo, OffloadChoice::OnDevice));
    QCOMPARE(combo->currentIndex(), int(OffloadChoice::HostMemory));
    auto* note = child<QLabel>(panel, "offloadNoteLabel");
    QVERIFY2(note && note->isVisibleTo(&panel) && note->text().contains(reason), qPrintable(note ? note->text() : QString()));

    // The same config at stage 1 on the CPU may offload.
    config.runtime.zero_stage = 1;
    config.runtime.device = "cpu";
    config.runtime.offload = "none";
    panel.setRunConfig(config);
    QVERIFY(combo->isEnabled());
    QVERIFY(itemEnabled(combo, OffloadChoice::HostMemory));
    QVERIFY(!combo->toolTip().contains(reason));
}

QTEST_MAIN(TestBatchOffload)
#include "test_batch_offload.moc"
