// Tests the Training tab's monitor: x axes, outlier-robust ranges, crosshair, event marks, memory, export.
#include <cmath>
#include <random>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QSlider>
#include <QTemporaryDir>
#include <QTest>

#include "metric_points.h"
#include "monitor/expert_load_heatmap.h"
#include "monitor/metric_plots.h"
#include "monitor/monitor_view.h"
#include "widget_lookup.h"
#include "trainbench/metric_point.h"
#include "trainbench/run_config.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

RunConfig config(int64_t steps) {
    RunConfig c;
    c.train.steps = steps;
    c.train.lr = 3e-4;
    c.train.micro_batch_size = 8;
    c.train.gradient_accumulation_steps = 4;
    c.train.seq_len = 1024;
    c.model.vocab_size = 32000;
    return c;
}

RunEvent runEvent(int64_t step, const std::string& kind, const std::string& message) {
    RunEvent e;
    e.step = step;
    e.wall_time = 0.5 * static_cast<double>(step);
    e.kind = kind;
    e.message = message;
    return e;
}

// 300 steps of what a small MoE run reports: loss decaying with noise and one spike, lr warmup
// then cosine, throughput, memory of two GPUs, expert loads of 2 layers x 8 experts.
void feedRealisticRun(MonitorView& view, int64_t steps = 300) {
    std::mt19937 random(7);
    std::normal_distribution<double> noise(0.0, 1.0);
    const double tokens_per_step = 32.0 * 1024.0;
    for (int64_t step = 1; step <= steps; ++step) {
        const double wall = 0.61 * static_cast<double>(step) + 2.0;
        const auto tokens = static_cast<int64_t>(tokens_per_step * static_cast<double>(step));
        QVector<MetricPoint> batch;
        auto add = [&](const std::string& key, double value) { batch.push_back(point(key, step, value, wall, tokens)); };
        double loss = 2.35 + 8.0 * std::exp(-static_cast<double>(step) / 40.0) + 0.06 * noise(random);
        double grad = 0.25 + 2.0 * std::exp(-static_cast<double>(step) / 25.0) + 0.04 * std::abs(noise(random));
        if (step == 190) {
            loss *= 3.2;
            grad *= 40.0;
        }
        const double warmup = 30.0;
        const double lr = step <= warmup ? 3e-4 * static_cast<double>(step) / warmup
                                         : 3e-5 + 0.5 * (3e-4 - 3e-5) *
                                                      (1.0 + std::cos(M_PI * (static_cast<double>(step) - warmup) /
                                                                      (static_cast<double>(steps) - warmup)));
        add("train/loss", loss);
        add("train/grad_norm", grad);
        add("train/lr", lr);
        add("train/tokens", static_cast<double>(tokens));
        add("perf/tokens_per_s", step == 1 ? 18000.0 : 53000.0 + 1200.0 * noise(random));
        if (step % 100 == 0) add("eval/loss", 2.45 + 8.0 * std::exp(-static_cast<double>(step) / 40.0));
        for (int device = 0; device < 2; ++device) {
            const std::string prefix = "mem/cuda" + std::to_string(device) + "/";
            const double ramp = std::min(1.0, static_cast<double>(step) / 5.0);
            add(prefix + "allocated_bytes", (5.2 + 4.1 * ramp + 0.3 * device + 0.05 * noise(random)) * kGiB);
            add(prefix + "peak_bytes", (6.0 + 7.9 * ramp + 0.3 * device) * kGiB);
            add(prefix + "reserved_bytes", (7.0 + 8.5 * ramp + 0.3 * device) * kGiB);
            add(prefix + "device_used_bytes", (7.6 + 8.9 * ramp + 0.3 * device) * kGiB);
        }
        for (int layer = 1; layer <= 2; ++layer) {
            for (int expert = 0; expert < 8; ++expert) {
                // Top-2 of 8: 8192 tokens per expert when balanced; layer 2 favours expert 3.
                double load = 8192.0 * (1.0 + 0.12 * noise(random));
                if (layer == 2 && expert == 3) load *= 2.1;
                if (layer == 2 && expert == 6) load *= 0.4;
                add("moe/layer" + std::to_string(layer) + "/expert" + std::to_string(expert) + "/tokens",
                    std::round(load));
            }
        }
        view.addPoints(batch);
        if (step == 120) view.addEvent(runEvent(step, "oom_backoff", "out of memory at micro_batch_size 16: now 8 x 2"));
        if (step == 190) view.addEvent(runEvent(step, "advice", "loss spike: 3.2x the running mean; lower train.lr"));
        if (step == 250) view.addEvent(runEvent(step, "checkpoint", "runs/demo/checkpoints/step_250.pt"));
    }
}

QVector<double> keysOf(const QCPGraph* graph) {
    QVector<double> keys;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) keys << it->key;
    return keys;
}

}  // namespace

class TestMonitorView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void tokensAxisUsesCumulativeTokens();
    void wallTimeAxis();
    void robustRangeIgnoresOneSpike();
    void anAdaptiveRunsStepAxisFollowsTheTokensLeft();
    void logScale();
    void smoothingReweightsFullSeries();
    void crosshairShowsValuesWithUnits();
    void eventMarkersStandAtTheirSteps();
    void memoryPerDevice();
    void bytesMovedInTheMemoryRow();
    void controlsDriveThePlots();
    void heatmapShowsWhenLoadsArrive();
    void exportWritesPngAndPdf();
    void screenshot();
};

void TestMonitorView::tokensAxisUsesCumulativeTokens() {
    MetricPlots plots;
    plots.resetRun(config(50));
    // Tokens per step vary (a batch-size ramp); the points' own tokens field stays 0, so
    // only train/tokens can place them.
    QVector<double> cumulative;
    double tokens = 0;
    for (int64_t step = 1; step <= 50; ++step) {
        tokens += 1000.0 + 37.0 * static_cast<double>(step);
        cumulative << tokens;
        // train/tokens last in the batch: its step's loss must still land at its tokens.
        plots.addPoints({point("train/loss", step, 5.0 - 0.01 * step), point("train/tokens", step, tokens)});
    }
    plots.setXAxis(XAxis::Tokens);
    QCOMPARE(plots.xAxis(), XAxis::Tokens);
    QCOMPARE(keysOf(plots.lossRawGraph()), cumulative);
    QCOMPARE(keysOf(plots.lossSmoothedGraph()), cumulative);
    // Points that arrive while on the tokens axis land there too.
    tokens += 5000.0;
    plots.addPoints({point("train/tokens", 51, tokens), point("train/loss", 51, 4.4)});
    QCOMPARE(plots.lossRawGraph()->data()->at(50)->key, tokens);
    plots.flushReplot();
    // Following the run: the axis reaches at least the newest tokens.
    QVERIFY(plots.plotRect(MetricPlots::Plot::Loss)->axis(QCPAxis::atBottom)->range().upper >= tokens);
    QCOMPARE(plots.plotRect(MetricPlots::Plot::Memory)->axis(QCPAxis::atBottom)->label(), QStringLiteral("tokens seen"));
    // And back: steps again.
    plots.setXAxis(XAxis::Step);
    QCOMPARE(plots.lossRawGraph()->data()->at(0)->key, 1.0);
    QCOMPARE(plots.lossRawGraph()->data()->at(50)->key, 51.0);
}

void TestMonitorView::wallTimeAxis() {
    MetricPlots plots;
    plots.resetRun(config(10));
    for (int64_t step = 1; step <= 10; ++step)
        plots.addPoints({point("train/loss", step, 3.0, 1.5 * step + 4.0), point("train/lr", step, 1e-4, 1.5 * step + 4.0)});
    plots.setXAxis(XAxis::WallTime);
    QCOMPARE(plots.lossRawGraph()->data()->at(0)->key, 5.5);
    QCOMPARE(plots.learningRateGraph()->data()->at(9)->key, 19.0);
}

void TestMonitorView::robustRangeIgnoresOneSpike() {
    MetricPlots plots;
    plots.resize(800, 600);
    plots.resetRun(config(200));
    for (int64_t step = 1; step <= 200; ++step) {
        const double loss = step == 120 ? 3000.0 : 3.0 + 0.1 * std::sin(static_cast<double>(step));
        plots.addPoints({point("train/loss", step, loss), point("train/grad_norm", step, step == 60 ? 500.0 : 0.5)});
    }
    plots.flushReplot();
    QVERIFY(plots.ignoreOutliers());
    const QCPRange loss_range = plots.plotRect(MetricPlots::Plot::Loss)->axis(QCPAxis::atLeft)->range();
    QVERIFY2(loss_range.upper < 10.0, qPrintable(QString::number(loss_range.upper)));
    // The ordinary curve is wholly in view, with room.
    QVERIFY(loss_range.upper > 3.1 && loss_range.lower < 2.9);
    // The spike is kept and drawn (clipped), not dropped.
    QCOMPARE(plots.lossRawGraph()->data()->at(119)->value, 3000.0);
    const QCPRange grad_range = plots.plotRect(MetricPlots::Plot::GradNorm)->axis(QCPAxis::atLeft)->range();
    QVERIFY2(grad_range.upper < 5.0, qPrintable(QString::number(grad_range.upper)));

    // Outliers counted: the spike sets the top.
    plots.setIgnoreOutliers(false);
    plots.flushReplot();
    QVERIFY(plots.plotRect(MetricPlots::Plot::Loss)->axis(QCPAxis::atLeft)->range().upper >= 3000.0);
}

// batch_policy adaptive over 100 steps' tokens at B 32 (3,276,800 positions): the step axis ends
// where the tokens left run out at the current batch. After 10 steps of B 32 and 10 of B 128,
// 1,638,400 are left, 12.5 steps of 131,072: the axis ends at step 33 (+ half a step of room).
void TestMonitorView::anAdaptiveRunsStepAxisFollowsTheTokensLeft() {
    RunConfig adaptive = config(100);
    adaptive.train.batch_policy = "adaptive";
    MetricPlots plots;
    plots.resize(800, 600);
    plots.resetRun(adaptive);
    plots.flushReplot();
    QCOMPARE(plots.plotRect(MetricPlots::Plot::Loss)->axis(QCPAxis::atBottom)->range().upper, 101.0);  // + 1 % of room
    int64_t tokens = 0;
    for (int64_t step = 1; step <= 20; ++step) {
        const double batch = step <= 10 ? 32 : 128;
        tokens += static_cast<int64_t>(batch) * 1024;
        plots.addPoints({point("train/loss", step, 3.0, 0.0, tokens), point("train/tokens", step, double(tokens), 0.0, tokens),
                         point("train/global_batch", step, batch, 0.0, tokens)});
    }
    plots.flushReplot();
    QCOMPARE(plots.plotRect(MetricPlots::Plot::Loss)->axis(QCPAxis::atBottom)->range().upper, 33.5);
}

void TestMonitorView::logScale() {
    MetricPlots plots;
    plots.resetRun(config(100));
    for (int64_t step = 1; step <= 100; ++step)
        plots.addPoints({point("train/loss", step, 10.0 / step), point("train/grad_norm", step, 100.0 / (step * step))});
    plots.setLogY(MetricPlots::Plot::GradNorm, true);
    plots.setLogY(MetricPlots::Plot::Loss, true);
    plots.flushReplot();
    QVERIFY(plots.logY(MetricPlots::Plot::Loss));
    QVERIFY(plots.logY(MetricPlots::Plot::GradNorm));
    QVERIFY(!plots.logY(MetricPlots::Plot::Memory));
    const QCPRange grad = plots.plotRect(MetricPlots::Plot::GradNorm)->axis(QCPAxis::atLeft)->range();
    QVERIFY(grad.lower > 0.0);
    // Four decades of values, robustly fitted: all but the first steps are in view.
    QVERIFY2(grad.lower < 0.02 && grad.upper > 2.0 && grad.upper < 100.0, qPrintable(QStringLiteral("%1 %2").arg(grad.lower).arg(grad.upper)));
    plots.setLogY(MetricPlots::Plot::Loss, false);
    QVERIFY(!plots.logY(MetricPlots::Plot::Loss));
}

void TestMonitorView::smoothingReweightsFullSeries() {
    MetricPlots plots;
    plots.resetRun(config(3));
    plots.addPoints({point("train/loss", 1, 4.0), point("train/loss", 2, 2.0), point("train/loss", 3, 3.0)});
    plots.setSmoothingWeight(0.5);
    QCOMPARE(plots.smoothingWeight(), 0.5);
    // Debiased EMA, w = 0.5: 4; (1 + 1) / 0.75 = 2.6667; (1 + 1.5) / 0.875 = 2.857.
    QCOMPARE(plots.lossSmoothedGraph()->data()->at(0)->value, 4.0);
    QVERIFY(std::abs(plots.lossSmoothedGraph()->data()->at(1)->value - 2.0 / 0.75) < 1e-12);
    QVERIFY(std::abs(plots.lossSmoothedGraph()->data()->at(2)->value - 2.5 / 0.875) < 1e-12);
    plots.setSmoothingWeight(0.0);
    QCOMPARE(plots.lossSmoothedGraph()->data()->at(1)->value, 2.0);
}

void TestMonitorView::crosshairShowsValuesWithUnits() {
    MetricPlots plots;
    plots.resize(900, 700);
    plots.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    plots.resetRun(config(100));
    for (int64_t step = 1; step <= 100; ++step)
        plots.addPoints({point("train/loss", step, 2.0 + step / 100.0, step * 0.5), point("train/tokens", step, step * 4096.0),
                         point("train/lr", step, 1e-4 * step), point("perf/tokens_per_s", step, 50000.0 + step),
                         point("mem/cpu0/peak_bytes", step, 1.5 * kGiB, step * 0.5)});
    plots.flushReplot();
    QVERIFY(!plots.crosshairVisible());
    // Between steps 42 and 43, nearer 42: every curve reports its step-42 point.
    plots.showCrosshairAt(42.3);
    QVERIFY(plots.crosshairVisible());
    const QString text = plots.crosshairText();
    QVERIFY2(text.contains(QStringLiteral("step 42")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("172k tokens")), qPrintable(text));  // 42 x 4096 = 172,032
    QVERIFY2(text.contains(QStringLiteral("loss  2.4200")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("nats/token")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("lr  0.0042")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("50k tokens/s")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("cpu0  peak 1.50 GiB")), qPrintable(text));

    // The mouse moves the crosshair; leaving the plot hides it.
    QCPAxisRect* rect = plots.plotRect(MetricPlots::Plot::Loss);
    const double px = rect->axis(QCPAxis::atBottom)->coordToPixel(70.0);
    QTest::mouseMove(&plots, QPoint(static_cast<int>(std::lround(px)), rect->rect().center().y()));
    QTRY_VERIFY(plots.crosshairText().contains(QStringLiteral("step 70")));
    plots.hideCrosshair();
    QVERIFY(!plots.crosshairVisible());
    QVERIFY(plots.crosshairText().isEmpty());
}

void TestMonitorView::eventMarkersStandAtTheirSteps() {
    MetricPlots plots;
    plots.resize(900, 700);
    plots.resetRun(config(100));
    for (int64_t step = 1; step <= 100; ++step)
        plots.addPoints({point("train/loss", step, 3.0, step * 2.0), point("train/tokens", step, step * 1000.0)});
    QVERIFY(plots.addEvent(runEvent(40, "oom_backoff", "out of memory at micro_batch_size 8")));
    QVERIFY(plots.addEvent(runEvent(60, "checkpoint", "ckpt/step_60.pt")));
    QVERIFY(plots.addEvent(runEvent(61, "skipped_step", "non-finite gradients")));
    QVERIFY(plots.addEvent(runEvent(70, "advice", "raise bias_update_speed")));
    QVERIFY(!plots.addEvent(runEvent(71, "status", "paused")));  // the log's, not a mark
    plots.addEventMarker(80, QStringLiteral("checkpoint"), QStringLiteral("ckpt/step_80.pt"));

    const QVector<EventMarker>& marks = plots.eventMarkers();
    QCOMPARE(marks.size(), 5);
    QCOMPARE(marks[0].kind, QStringLiteral("oom_backoff"));
    QCOMPARE(marks[0].x, 40.0);
    QCOMPARE(marks[1].x, 60.0);
    QCOMPARE(marks[4].x, 80.0);
    // On the tokens axis the marks move with their steps' tokens.
    plots.setXAxis(XAxis::Tokens);
    QCOMPARE(marks[0].x, 40000.0);
    QCOMPARE(marks[4].x, 80000.0);
    // On wall time: the event's own time, or its step's when the event had none.
    plots.setXAxis(XAxis::WallTime);
    QCOMPARE(marks[0].x, 20.0);
    QCOMPARE(marks[4].x, 160.0);
    plots.setXAxis(XAxis::Step);

    // Each kind is named once in the legend.
    QStringList names;
    for (int i = 0; i < plots.legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plots.legend->item(i))) names << item->plottable()->name();
    QCOMPARE(names.count(QStringLiteral("checkpoint")), 1);
    QVERIFY(names.contains(QStringLiteral("OOM back-off")));
    QVERIFY(names.contains(QStringLiteral("skipped step")));
    // The crosshair on a mark names it.
    plots.flushReplot();
    plots.showCrosshairAt(60.0);
    QVERIFY2(plots.crosshairText().contains(QStringLiteral("checkpoint at step 60: ckpt/step_60.pt")),
             qPrintable(plots.crosshairText()));
    // A new run starts unmarked.
    plots.resetRun(config(10));
    QVERIFY(plots.eventMarkers().isEmpty());
}

void TestMonitorView::memoryPerDevice() {
    MetricPlots plots;
    plots.resize(900, 700);
    plots.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    plots.resetRun(config(10));
    for (int64_t step = 1; step <= 10; ++step) {
        plots.addPoints({point("mem/cuda0/allocated_bytes", step, 2.0 * kGiB), point("mem/cuda0/peak_bytes", step, 3.0 * kGiB),
                         point("mem/cuda0/reserved_bytes", step, 3.5 * kGiB),
                         point("mem/cuda0/device_used_bytes", step, 4.0 * kGiB),
                         point("mem/cuda0/host_bytes", step, 1.0 * kGiB),  // offload's host tier
                         point("mem/cuda0/free_bytes", step, 70.0 * kGiB),  // not drawn
                         point("mem/cuda0/utilization_percent", step, 99.0),  // bus activity, not memory
                         point("mem/cuda1/peak_bytes", step, 5.0 * kGiB)});
    }
    plots.flushReplot();
    QCOMPARE(plots.memoryGraphCount(), 6);
    QVERIFY(!plots.memoryGraph(QStringLiteral("mem/cuda0/free_bytes")));
    QCPGraph* peak0 = plots.memoryGraph(QStringLiteral("mem/cuda0/peak_bytes"));
    QCPGraph* alloc0 = plots.memoryGraph(QStringLiteral("mem/cuda0/allocated_bytes"));
    QCPGraph* peak1 = plots.memoryGraph(QStringLiteral("mem/cuda1/peak_bytes"));
    QVERIFY(peak0 && alloc0 && peak1);
    QCOMPARE(peak0->dataCount(), 10);
    QCOMPARE(peak0->data()->at(0)->value, 3.0 * kGiB);
    // One colour per device; the kind of memory is the line style.
    QCOMPARE(peak0->pen().color(), alloc0->pen().color());
    QVERIFY(peak0->pen().color() != peak1->pen().color());
    QVERIFY(peak0->pen().style() != alloc0->pen().style());
    QCOMPARE(peak0->name(), QStringLiteral("cuda0 peak"));
    QCPAxis* y = plots.plotRect(MetricPlots::Plot::Memory)->axis(QCPAxis::atLeft);
    // The legend names each device once (its colour) and each kind once (its line style).
    QStringList legend_names;
    for (int i = 0; i < plots.graphCount(); ++i)
        if (plots.graph(i)->valueAxis() == y && plots.graph(i)->dataCount() == 0) legend_names << plots.graph(i)->name();
    QCOMPARE(legend_names, (QStringList{QStringLiteral("cuda0"), QStringLiteral("cuda1"), QStringLiteral("allocated"),
                                        QStringLiteral("peak"), QStringLiteral("reserved"), QStringLiteral("device used"),
                                        QStringLiteral("host (offload)")}));
    plots.showCrosshairAt(5.0);
    QVERIFY2(plots.crosshairText().contains(QStringLiteral(
                 "cuda0  allocated 2.00 GiB · peak 3.00 GiB · reserved 3.50 GiB · device used 4.00 GiB · host (offload) 1.00 GiB")),
             qPrintable(plots.crosshairText()));
    // The axis is in GiB and anchored at zero, with the highest peak in view.
    QCOMPARE(y->range().lower, 0.0);
    QVERIFY(y->range().upper >= 5.0 * kGiB);
    const QVector<QString> labels = y->tickVectorLabels();
    QVERIFY(!labels.isEmpty());
    for (const QString& label : labels) QVERIFY2(label.endsWith(QStringLiteral(" GiB")), qPrintable(label));
}

// The bytes every rank moved in a step (io/to_device_bytes, io/to_host_bytes, io/read_bytes,
// io/write_bytes) are drawn in the memory row under a name and colour of their own, a line style a
// direction, and read in the crosshair.
void TestMonitorView::bytesMovedInTheMemoryRow() {
    MetricPlots plots;
    plots.resize(900, 700);
    plots.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    plots.resetRun(config(10));
    for (int64_t step = 1; step <= 10; ++step)
        plots.addPoints({point("mem/cuda0/peak_bytes", step, 3.0 * kGiB), point("io/to_device_bytes", step, 1.0 * kGiB),
                         point("io/to_host_bytes", step, 0.5 * kGiB), point("io/read_bytes", step, 2.0 * kGiB),
                         point("io/read_gbps", step, 4.0)});  // a rate: not drawn
    plots.flushReplot();
    QCOMPARE(plots.memoryGraphCount(), 4);
    QCPGraph* up = plots.memoryGraph(QStringLiteral("io/to_device_bytes"));
    QCPGraph* down = plots.memoryGraph(QStringLiteral("io/to_host_bytes"));
    QCPGraph* read = plots.memoryGraph(QStringLiteral("io/read_bytes"));
    QCPGraph* peak = plots.memoryGraph(QStringLiteral("mem/cuda0/peak_bytes"));
    QVERIFY(up && down && read && peak);
    QCOMPARE(up->dataCount(), 10);
    QCOMPARE(up->data()->at(0)->value, 1.0 * kGiB);
    QCOMPARE(up->name(), QStringLiteral("moved a step to the devices"));
    QCOMPARE(up->pen().color(), down->pen().color());
    QVERIFY(up->pen().color() != peak->pen().color());
    QVERIFY(up->pen().style() != down->pen().style() && down->pen().style() != read->pen().style());
    QCPAxis* y = plots.plotRect(MetricPlots::Plot::Memory)->axis(QCPAxis::atLeft);
    QStringList legend_names;
    for (int i = 0; i < plots.graphCount(); ++i)
        if (plots.graph(i)->valueAxis() == y && plots.graph(i)->dataCount() == 0) legend_names << plots.graph(i)->name();
    QCOMPARE(legend_names, (QStringList{QStringLiteral("cuda0"), QStringLiteral("moved a step"), QStringLiteral("peak"),
                                        QStringLiteral("to the devices"), QStringLiteral("to the host"),
                                        QStringLiteral("NVMe read")}));
    plots.showCrosshairAt(5.0);
    QVERIFY2(plots.crosshairText().contains(
                 QStringLiteral("moved a step  to the devices 1.00 GiB · to the host 512.0 MiB · NVMe read 2.00 GiB")),
             qPrintable(plots.crosshairText()));
}

void TestMonitorView::controlsDriveThePlots() {
    MonitorView view;
    QVERIFY(view.plots());
    QCOMPARE(view.plots()->objectName(), QStringLiteral("metricPlots"));
    auto* combo = child<QComboBox>(view, "xAxisCombo");
    auto* log_loss = child<QCheckBox>(view, "logLossCheck");
    auto* log_grad = child<QCheckBox>(view, "logGradNormCheck");
    auto* outliers = child<QCheckBox>(view, "ignoreOutliersCheck");
    auto* smoothing = child<QSlider>(view, "smoothingSlider");
    QVERIFY(combo && log_loss && log_grad && outliers && smoothing);
    QVERIFY(child<QWidget>(view, "exportButton"));

    combo->setCurrentIndex(combo->findText(QStringLiteral("Tokens seen")));
    QCOMPARE(view.plots()->xAxis(), XAxis::Tokens);
    view.setXAxis(XAxis::WallTime);
    QCOMPARE(combo->currentText(), QStringLiteral("Wall time"));
    QCOMPARE(view.plots()->xAxis(), XAxis::WallTime);
    log_loss->setChecked(true);
    QVERIFY(view.plots()->logY(MetricPlots::Plot::Loss));
    log_grad->setChecked(true);
    QVERIFY(view.plots()->logY(MetricPlots::Plot::GradNorm));
    outliers->setChecked(false);
    QVERIFY(!view.plots()->ignoreOutliers());
    QCOMPARE(smoothing->value(), 60);
    smoothing->setValue(90);
    QCOMPARE(view.plots()->smoothingWeight(), 0.9);
}

void TestMonitorView::heatmapShowsWhenLoadsArrive() {
    MonitorView view;
    view.resize(900, 700);
    view.resetRun(config(10));
    QVERIFY(view.heatmap()->isHidden());
    view.addPoints({point("train/loss", 1, 3.0)});
    QVERIFY(view.heatmap()->isHidden());  // a dense model's points
    view.addPoints({point("moe/layer1/expert0/tokens", 1, 10.0), point("moe/layer1/expert1/tokens", 1, 30.0)});
    QVERIFY(!view.heatmap()->isHidden());
    view.flushReplot();
    QCOMPARE(view.heatmap()->cellLoad(1, 1), 30.0);
    // Forwarded events mark the plots.
    QVERIFY(view.addEvent(runEvent(1, "checkpoint", "c.pt")));
    QCOMPARE(view.plots()->eventMarkers().size(), 1);
    view.resetRun(config(10));
    QVERIFY(view.heatmap()->isHidden());
    QVERIFY(!view.heatmap()->hasData());
}

void TestMonitorView::exportWritesPngAndPdf() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    MonitorView view;
    view.resize(1000, 700);
    view.resetRun(config(300));
    feedRealisticRun(view, 60);
    const QString png = dir.filePath(QStringLiteral("plot.png"));
    const QString pdf = dir.filePath(QStringLiteral("plot.pdf"));
    QVERIFY(view.exportPlot(png, 640, 400));
    const QImage image(png);
    QCOMPARE(image.size(), QSize(640, 400));
    // Not a blank page: the curves put colour on it.
    int coloured = 0;
    for (int y = 0; y < image.height(); y += 4)
        for (int x = 0; x < image.width(); x += 4)
            if (QColor(image.pixel(x, y)).saturation() > 80) ++coloured;
    QVERIFY2(coloured > 50, qPrintable(QString::number(coloured)));
    QVERIFY(view.exportPlot(pdf));
    QFile file(pdf);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.size() > 1000);
    QVERIFY(file.read(4) == QByteArray("%PDF"));
    QVERIFY(!view.exportPlot(dir.filePath(QStringLiteral("plot.bmp"))));
}

void TestMonitorView::screenshot() {
    // The monitor after 300 steps of a realistic run, at the window's size and at the size it
    // gets inside the window; written beside the test for a person to look at.
    struct Shot {
        QSize size;
        XAxis axis;
        const char* name;
    };
    for (const Shot& shot : {Shot{QSize(1280, 800), XAxis::Step, "monitor_1280x800.png"},
                             Shot{QSize(850, 740), XAxis::Step, "monitor_850x740.png"},
                             Shot{QSize(1280, 800), XAxis::Tokens, "monitor_tokens.png"}}) {
        const QSize size = shot.size;
        MonitorView view;
        view.setXAxis(shot.axis);
        view.resize(size);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.resetRun(config(300));
        feedRealisticRun(view);
        QTest::qWait(50);
        view.flushReplot();
        // A crosshair mid-run, as a user hovering there sees it.
        const QCPRange keys = view.plots()->plotRect(MetricPlots::Plot::Loss)->axis(QCPAxis::atBottom)->range();
        view.plots()->showCrosshairAt(keys.lower + 0.5 * keys.size());
        QVERIFY(view.grab().save(QDir::current().filePath(QLatin1String(shot.name))));
        QCOMPARE(view.heatmap()->layers(), (QList<int>{1, 2}));
    }
}

QTEST_MAIN(TestMonitorView)
#include "test_monitor_view.moc"
