// Tests "Measure this machine" in the batch panel: planned for this machine, the step time lacks a rate only a measurement gives; the button measures off the GUI thread (a busy bar, the button off meanwhile), keeps the figures in the settings under this machine's group, and the step time is then the planner's with those figures in the target section; the next start plans with the kept figures without measuring; another machine's figures are not this one's; a directory that cannot be probed is said on the panel.
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "widget_lookup.h"
#include "tiny_gui_config.h"
#include "batch/batch_panel.h"
#include "batch/machine_figures.h"
#include "trainbench/memory_plan.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// Generous: the probe takes well under a second with small buffers, but a machine busy
// building may give it a fraction of a core.
constexpr int kProbeTimeoutMs = 120000;
// 8 MiB a copy buffer instead of the CLI's 256: the copies take milliseconds.
constexpr int64_t kProbeBytes = int64_t(8) << 20;

// The tiny model on one CPU rank, planned for this machine with no rate in the target section:
// its step time needs target.compute_tflops, which only a measurement gives.
RunConfig tinyHere() {
    RunConfig config = tinyGuiConfig();
    config.runtime.threads = 1;
    config.runtime.world_size = 1;
    config.target = TargetConfig{};
    return config;
}

// The planner's sentence for `config` on its target, as `trainbench-cli plan` prints it.
QString stepTimeOf(const RunConfig& config) {
    const TargetMachine target = resolveTarget(config);
    return QString::fromStdString(
        describeStepTime(predictStepTime(configOnTarget(config, target), planOnTarget(config, target), target)));
}

QString text(const QWidget& parent, const char* name) {
    auto* label = child<QLabel>(parent, name);
    return label ? label->text() : QStringLiteral("<no %1>").arg(QLatin1String(name));
}

}  // namespace

class TestMachineProbe : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void measuringKeepsTheFiguresAndPredictsTheStepTime();
    void theNextStartPlansWithTheKeptFigures();
    void anotherMachinesFiguresAreNotThisOnes();
    void theRankThreadsCollectivesRateIsOfItsRankCount();
    void aDirectoryThatCannotBeProbedIsSaidOnThePanel();
    void anotherTargetOffersNoMeasurement();

private:
    QTemporaryDir settings_dir_;
    QString settings_file_;
};

void TestMachineProbe::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(settings_dir_.isValid());
}

// Each test its own settings file (TRAINBENCH_SETTINGS, as the window's layout): no user's
// settings are read or written, and no other suite running beside this one sees the figures.
void TestMachineProbe::init() {
    settings_file_ = settings_dir_.filePath(QStringLiteral("%1.ini").arg(QLatin1String(QTest::currentTestFunction())));
    qputenv("TRAINBENCH_SETTINGS", settings_file_.toLocal8Bit());
}

void TestMachineProbe::cleanup() { qunsetenv("TRAINBENCH_SETTINGS"); }

void TestMachineProbe::measuringKeepsTheFiguresAndPredictsTheStepTime() {
    const RunConfig config = tinyHere();
    BatchPanel panel;
    panel.setMachineProbeBytes(kProbeBytes);
    panel.setRunConfig(config);
    panel.show();
    auto* button = child<QPushButton>(panel, "measureMachineButton");
    auto* progress = child<QProgressBar>(panel, "machineProbeProgress");
    QVERIFY(button && progress);
    QVERIFY2(text(panel, "stepTimeLabel").contains(QStringLiteral("not predicted")), qPrintable(text(panel, "stepTimeLabel")));
    QVERIFY(button->isVisibleTo(&panel));
    QCOMPARE(button->text(), QStringLiteral("Measure this machine"));
    QVERIFY(button->isEnabled());
    QVERIFY(!progress->isVisibleTo(&panel));

    // Off the GUI thread: the click returns at once, the busy bar shows, the button waits.
    QSignalSpy measured(&panel, &BatchPanel::machineMeasured);
    QTest::mouseClick(button, Qt::LeftButton);
    QVERIFY(panel.isMeasuringMachine());
    QVERIFY(!button->isEnabled());
    QVERIFY(progress->isVisibleTo(&panel));
    QVERIFY(!panel.measureMachine());  // one at a time
    QTRY_VERIFY_WITH_TIMEOUT(measured.count() == 1, kProbeTimeoutMs);
    QVERIFY2(measured.at(0).at(0).toBool(), qPrintable(text(panel, "machineProbeLabel")));
    QVERIFY(!panel.isMeasuringMachine());
    QVERIFY(button->isEnabled());
    QVERIFY(!progress->isVisibleTo(&panel));
    QCOMPARE(button->text(), QStringLiteral("Measure again"));

    // Kept in the settings, in this machine's group, by MachineProbe's field names.
    double copy_gbps = 0, tflops = 0;
    {
        QSettings settings(settings_file_, QSettings::IniFormat);
        QVERIFY(machineFiguresGroup().startsWith(QStringLiteral("machineProbe/")));
        settings.beginGroup(machineFiguresGroup());
        copy_gbps = settings.value(QStringLiteral("host_copy_gbps")).toDouble();
        tflops = settings.value(QStringLiteral("cpu_fp32_tflops")).toDouble();
        QVERIFY2(copy_gbps > 0 && tflops > 0, qPrintable(settings.allKeys().join(QLatin1Char(' '))));
        QCOMPARE(settings.value(QStringLiteral("threads")).toInt(), 1);
        QVERIFY(!settings.value(QStringLiteral("measured_at")).toString().isEmpty());
    }

    // The step time is the planner's with the figures where `trainbench-cli probe` tells a user
    // to set them: the copy rate as host memory bandwidth, the matrix rate as compute at mfu 1.
    RunConfig with_figures = config;
    with_figures.target.host_memory_gbps = copy_gbps;
    with_figures.target.compute_tflops = tflops;
    with_figures.target.mfu = 1;
    const QString step_time = text(panel, "stepTimeLabel");
    QVERIFY2(!step_time.contains(QStringLiteral("not predicted")), qPrintable(step_time));
    QVERIFY2(step_time.startsWith(QStringLiteral("predicted ")), qPrintable(step_time));
    QCOMPARE(step_time, stepTimeOf(with_figures));
    QVERIFY2(text(panel, "machineProbeLabel").startsWith(QStringLiteral("measured: host copy ")),
             qPrintable(text(panel, "machineProbeLabel")));
    // The figures are this machine's, planned with; the config stays the user's.
    QCOMPARE(panel.runConfig().target.compute_tflops, 0.0);
    QCOMPARE(panel.plannedConfig().target.compute_tflops, tflops);
    QCOMPARE(panel.target().compute_tflops, tflops);
    QVERIFY(button->isVisibleTo(&panel));  // to measure again
}

void TestMachineProbe::theNextStartPlansWithTheKeptFigures() {
    {
        QSettings settings(settings_file_, QSettings::IniFormat);
        settings.beginGroup(machineFiguresGroup());
        settings.setValue(QStringLiteral("threads"), 1);
        settings.setValue(QStringLiteral("host_copy_gbps"), 30.0);
        settings.setValue(QStringLiteral("cpu_fp32_tflops"), 0.1);
        settings.setValue(QStringLiteral("measured_at"), QStringLiteral("2026-12-08T10:00:00Z"));
    }
    const RunConfig config = tinyHere();
    BatchPanel panel;
    panel.setRunConfig(config);
    QVERIFY(!panel.isMeasuringMachine());
    auto* button = child<QPushButton>(panel, "measureMachineButton");
    QVERIFY(button);
    QVERIFY(button->isVisibleTo(&panel));
    QCOMPARE(button->text(), QStringLiteral("Measure again"));
    RunConfig with_figures = config;
    with_figures.target.host_memory_gbps = 30;
    with_figures.target.compute_tflops = 0.1;
    with_figures.target.mfu = 1;
    QCOMPARE(text(panel, "stepTimeLabel"), stepTimeOf(with_figures));
    QVERIFY2(text(panel, "stepTimeLabel").startsWith(QStringLiteral("predicted ")), qPrintable(text(panel, "stepTimeLabel")));
    QCOMPARE(text(panel, "machineProbeLabel"), QStringLiteral("measured: host copy 30 GB/s, CPU 0.1 TFLOP/s fp32 (1 thread)"));

    // A rate the config's target section sets stays its own.
    RunConfig own = config;
    own.target.compute_tflops = 2;
    panel.setRunConfig(own);
    RunConfig own_with_figures = own;
    own_with_figures.target.host_memory_gbps = 30;
    QCOMPARE(panel.target().compute_tflops, 2.0);
    QCOMPARE(panel.target().mfu, own.target.mfu);
    QCOMPARE(text(panel, "stepTimeLabel"), stepTimeOf(own_with_figures));
}

void TestMachineProbe::anotherMachinesFiguresAreNotThisOnes() {
    {
        QSettings settings(settings_file_, QSettings::IniFormat);
        settings.beginGroup(machineFiguresGroup() + QStringLiteral("-another-node"));
        settings.setValue(QStringLiteral("host_copy_gbps"), 30.0);
        settings.setValue(QStringLiteral("cpu_fp32_tflops"), 0.1);
    }
    BatchPanel panel;
    panel.setRunConfig(tinyHere());
    QVERIFY2(text(panel, "stepTimeLabel").contains(QStringLiteral("not predicted")), qPrintable(text(panel, "stepTimeLabel")));
    QCOMPARE(child<QPushButton>(panel, "measureMachineButton")->text(), QStringLiteral("Measure this machine"));
}

// Kept figures with the collectives of two rank threads: a config of two CPU ranks plans its
// collectives term with them (target.interconnect_gbps, as `probe` tells a user to set it) and
// the label says so; a config of four ranks plans without (the rate is of two).
void TestMachineProbe::theRankThreadsCollectivesRateIsOfItsRankCount() {
    {
        QSettings settings(settings_file_, QSettings::IniFormat);
        settings.beginGroup(machineFiguresGroup());
        settings.setValue(QStringLiteral("threads"), 1);
        settings.setValue(QStringLiteral("host_copy_gbps"), 30.0);
        settings.setValue(QStringLiteral("cpu_fp32_tflops"), 0.1);
        settings.setValue(QStringLiteral("collective_ranks"), 2);
        settings.setValue(QStringLiteral("rank_collectives_gbps"), 1.5);
    }
    RunConfig two = tinyHere();
    two.runtime.world_size = 2;
    BatchPanel panel;
    panel.setRunConfig(two);
    QCOMPARE(panel.plannedConfig().target.interconnect_gbps, 1.5);
    RunConfig with_figures = two;
    with_figures.target.host_memory_gbps = 30;
    with_figures.target.compute_tflops = 0.1;
    with_figures.target.mfu = 1;
    with_figures.target.interconnect_gbps = 1.5;
    QCOMPARE(text(panel, "stepTimeLabel"), stepTimeOf(with_figures));
    QVERIFY2(text(panel, "machineProbeLabel").contains(QStringLiteral("collectives 1.5 GB/s among 2 rank threads")),
             qPrintable(text(panel, "machineProbeLabel")));
    RunConfig four = two;
    four.runtime.world_size = 4;
    panel.setRunConfig(four);
    QCOMPARE(panel.plannedConfig().target.interconnect_gbps, 0.0);
}

void TestMachineProbe::aDirectoryThatCannotBeProbedIsSaidOnThePanel() {
    QTemporaryDir scratch;
    QVERIFY(scratch.isValid());
    RunConfig config = tinyHere();
    config.runtime.offload_dir = scratch.filePath(QStringLiteral("missing")).toStdString();
    BatchPanel panel;
    panel.setMachineProbeBytes(kProbeBytes);
    panel.setRunConfig(config);
    auto* button = child<QPushButton>(panel, "measureMachineButton");
    QVERIFY(button);
    QVERIFY(button->isVisibleTo(&panel));
    QSignalSpy measured(&panel, &BatchPanel::machineMeasured);
    QVERIFY(panel.measureMachine());
    QTRY_VERIFY_WITH_TIMEOUT(measured.count() == 1, kProbeTimeoutMs);
    QCOMPARE(measured.at(0).at(0).toBool(), false);
    const QString said = text(panel, "machineProbeLabel");
    QVERIFY2(said.startsWith(QStringLiteral("Could not measure this machine: ")) && said.contains(QStringLiteral("runtime.offload_dir")),
             qPrintable(said));
    QVERIFY(button->isEnabled());
    QCOMPARE(button->text(), QStringLiteral("Measure this machine"));
    QVERIFY(text(panel, "stepTimeLabel").contains(QStringLiteral("not predicted")));
    QSettings settings(settings_file_, QSettings::IniFormat);
    QVERIFY2(settings.allKeys().isEmpty(), qPrintable(settings.allKeys().join(QLatin1Char(' '))));
}

void TestMachineProbe::anotherTargetOffersNoMeasurement() {
    RunConfig config = tinyHere();
    config.target.kind = "h100-80";
    config.target.devices = 8;
    BatchPanel panel;
    panel.setRunConfig(config);
    QVERIFY(!child<QPushButton>(panel, "measureMachineButton")->isVisibleTo(&panel));
    // Back on this machine, the offer is back.
    panel.setRunConfig(tinyHere());
    QVERIFY(child<QPushButton>(panel, "measureMachineButton")->isVisibleTo(&panel));
}

QTEST_MAIN(TestMachineProbe)
#include "test_machine_probe.moc"
