// GUI benchmarks: how fast the Monitor takes points in and redraws, how long a big run takes
// to load from the store, and how late the GUI thread gets while the engine trains.
// Prints one JSON object per measurement. Run offscreen: QT_QPA_PLATFORM=offscreen.
#include <QApplication>
#include <QEventLoop>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTimer>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <qcustomplot.h>

#include "plotting/decimated_graph.h"
#include "runs/engine_bridge.h"
#include "app/main_window.h"
#include "monitor/metric_plots.h"
#include "trainbench/presets.h"
#include "trainbench/run_recorder.h"
#include "trainbench/training_session.h"
#include "trainbench/run_store.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// Median of five immediate full redraws, in milliseconds.
double medianReplotMs(QCustomPlot& plot) {
    std::vector<double> times;
    for (int i = 0; i < 5; ++i) {
        QElapsedTimer one;
        one.start();
        plot.replot(QCustomPlot::rpImmediateRefresh);
        times.push_back(one.nsecsElapsed() / 1e6);
    }
    return median(times);
}

// A loss-like curve: decay plus noise, as a long run draws it.
double lossAt(int64_t step, std::mt19937& rng) {
    std::normal_distribution<double> noise(0.0, 0.05);
    return 2.3 + 8.0 * std::exp(-double(step) / 20000.0) + noise(rng);
}

// Points per second through the Monitor's ingest path (addPoints, then a redraw) for the five
// per-step curves of a run, and the time of one full redraw afterwards.
void ingest(int64_t steps) {
    MetricPlots plots;
    plots.resize(1280, 800);
    RunConfig config;
    config.train.steps = steps;
    plots.resetRun(config);
    std::mt19937 rng(1);
    constexpr int64_t kBatch = 1000;  // about what the bridge delivers per 50 ms at high step rates
    QElapsedTimer clock;
    clock.start();
    for (int64_t first = 1; first <= steps; first += kBatch) {
        QVector<MetricPoint> points;
        for (int64_t s = first; s < first + kBatch && s <= steps; ++s) {
            const double wall = s * 0.01;
            points.push_back(MetricPoint{s, s * 1024, wall, "train/loss", lossAt(s, rng)});
            points.push_back(MetricPoint{s, s * 1024, wall, "train/tokens", double(s * 1024)});
            points.push_back(MetricPoint{s, s * 1024, wall, "train/grad_norm", 0.1 * lossAt(s, rng)});
            points.push_back(MetricPoint{s, s * 1024, wall, "train/lr", 3e-4 * std::cos(1.5 * s / double(steps))});
            points.push_back(MetricPoint{s, s * 1024, wall, "perf/tokens_per_s", 20000 + 1000 * lossAt(s, rng)});
        }
        plots.addPoints(points);
    }
    plots.flushReplot();
    const double seconds = clock.elapsed() / 1000.0;
    const double replot_ms = medianReplotMs(plots);
    std::printf("{\"bench\": \"monitor_ingest\", \"steps\": %lld, \"points\": %lld, \"seconds\": %.3f, "
                "\"points_per_s\": %.0f, \"replot_ms_median\": %.1f}\n",
                (long long)steps, (long long)(5 * steps), seconds, 5.0 * steps / seconds, replot_ms);
}

// Median of five redraws, each after panning the key axis by a hair: every one of them has
// to look at the data again (a decimated graph refills; QCustomPlot re-samples).
double medianPannedReplotMs(QCustomPlot& plot) {
    std::vector<double> times;
    for (int i = 0; i < 5; ++i) {
        const QCPRange range = plot.xAxis->range();
        const double shift = range.size() * 1e-3 * (i % 2 == 0 ? 1 : -1);
        QElapsedTimer one;
        one.start();
        plot.xAxis->setRange(range.lower + shift, range.upper + shift);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        times.push_back(one.nsecsElapsed() / 1e6);
    }
    return median(times);
}

// Ten curves of a million points each on one plot (the Compare view's setting): plain
// QCustomPlot graphs with adaptive sampling, then DecimatedGraph (what Compare draws with),
// full range and zoomed to 1 %, still and while panning.
void replotManyRuns(int runs, int64_t points_per_run) {
    std::vector<std::vector<double>> xs(runs), ys(runs);
    std::mt19937 rng(2);
    for (int r = 0; r < runs; ++r) {
        xs[r].resize(points_per_run);
        ys[r].resize(points_per_run);
        for (int64_t i = 0; i < points_per_run; ++i) {
            xs[r][i] = double(i + 1);
            ys[r][i] = lossAt(i + 1, rng) + 0.05 * r;
        }
    }
    for (bool decimate : {false, true}) {
        QCustomPlot plot;
        plot.resize(1280, 800);
        std::vector<std::unique_ptr<DecimatedGraph>> decimated;
        QElapsedTimer build;
        build.start();
        for (int r = 0; r < runs; ++r) {
            QCPGraph* graph = plot.addGraph();
            if (decimate) {
                decimated.push_back(std::make_unique<DecimatedGraph>(graph, xs[r], ys[r]));
            } else {
                graph->setData(QVector<double>(xs[r].begin(), xs[r].end()), QVector<double>(ys[r].begin(), ys[r].end()), true);
                graph->setAdaptiveSampling(true);
            }
        }
        const double build_ms = build.nsecsElapsed() / 1e6;
        QObject::connect(&plot, &QCustomPlot::beforeReplot, [&] {
            for (auto& graph : decimated) graph->refresh();
        });
        plot.rescaleAxes();
        const double full_ms = medianReplotMs(plot);
        const double full_panned_ms = medianPannedReplotMs(plot);
        plot.xAxis->setRange(points_per_run * 0.4, points_per_run * 0.41);
        const double zoomed_ms = medianReplotMs(plot);
        const double zoomed_panned_ms = medianPannedReplotMs(plot);
        std::printf("{\"bench\": \"replot_runs\", \"graphs\": \"%s\", \"runs\": %d, \"points_per_run\": %lld, "
                    "\"set_data_ms\": %.0f, \"replot_ms_median\": %.1f, \"panned_replot_ms_median\": %.1f, "
                    "\"zoomed_replot_ms_median\": %.1f, \"zoomed_panned_replot_ms_median\": %.1f}\n",
                    decimate ? "decimated" : "qcustomplot", runs, (long long)points_per_run, build_ms, full_ms,
                    full_panned_ms, zoomed_ms, zoomed_panned_ms);
    }
}

// One key of a run with a million steps, read back from SQLite (what opening an old run costs).
void loadFromStore(int64_t steps) {
    QTemporaryDir dir;
    RunStore store(dir.path().toStdString());
    RunRecord record;
    record.run_id = "bench-load";
    record.name = "bench";
    record.config_json = "{}";
    store.createRun(record);
    std::mt19937 rng(3);
    constexpr int64_t kBatch = 10000;
    for (int64_t first = 1; first <= steps; first += kBatch) {
        std::vector<MetricPoint> points;
        for (int64_t s = first; s < first + kBatch && s <= steps; ++s)
            points.push_back(MetricPoint{s, s * 1024, s * 0.01, "train/loss", lossAt(s, rng)});
        store.commitBatch(record.run_id, points, {});
    }
    std::vector<double> loads;
    size_t count = 0;
    for (int i = 0; i < 3; ++i) {
        RunStore reader(dir.path().toStdString());
        QElapsedTimer one;
        one.start();
        count = reader.metrics(record.run_id, "train/loss").size();
        loads.push_back(one.nsecsElapsed() / 1e6);
    }
    // The keys of the run (what Compare asks first of every run it opens).
    std::vector<double> keys_ms;
    for (int i = 0; i < 3; ++i) {
        RunStore reader(dir.path().toStdString());
        QElapsedTimer one;
        one.start();
        reader.metricKeys(record.run_id);
        keys_ms.push_back(one.nsecsElapsed() / 1e6);
    }
    std::printf("{\"bench\": \"store_load\", \"points\": %zu, \"load_ms_median\": %.1f, \"keys_ms_median\": %.2f}\n",
                count, median(loads), median(keys_ms));
}

// How late a 10 ms timer on the GUI thread fires while it runs: what a user's click waits.
class LatenessProbe {
public:
    LatenessProbe() {
        tick_.setTimerType(Qt::PreciseTimer);
        tick_.setInterval(10);
        QObject::connect(&tick_, &QTimer::timeout, [this] {
            if (since_tick_.isValid()) lateness_ms_.push_back(std::max(0.0, since_tick_.nsecsElapsed() / 1e6 - 10.0));
            since_tick_.restart();
        });
    }
    void start() { tick_.start(); }
    // Stops the timer; the lateness of every tick, ascending.
    std::vector<double> stop() {
        tick_.stop();
        std::sort(lateness_ms_.begin(), lateness_ms_.end());
        return lateness_ms_;
    }

private:
    QTimer tick_;
    QElapsedTimer since_tick_;
    std::vector<double> lateness_ms_;
};

// How late a 10 ms timer on the GUI thread fires while the window trains the tiny preset and
// draws its curves: the responsiveness a user feels.
void eventLoopLatency(int64_t steps) {
    QTemporaryDir store;
    qputenv("TRAINBENCH_STORE", store.path().toUtf8());
    RunConfig config = builtinTinyConfig();
    config.train.steps = steps;
    MainWindow window(config, QStringLiteral("tiny"));
    window.resize(1280, 800);
    window.show();
    LatenessProbe probe;
    QEventLoop loop;
    QObject::connect(window.bridge(), &EngineBridge::runFinished, &loop, &QEventLoop::quit);
    QTimer::singleShot(0, [&] {
        window.startRun();
        probe.start();
    });
    loop.exec();
    const std::vector<double> lateness_ms = probe.stop();
    auto at = [&](double q) { return lateness_ms[size_t(q * (lateness_ms.size() - 1))]; };
    std::printf("{\"bench\": \"event_loop_latency\", \"steps\": %lld, \"ticks\": %zu, \"late_ms_median\": %.2f, "
                "\"late_ms_p99\": %.2f, \"late_ms_max\": %.2f}\n",
                (long long)steps, lateness_ms.size(), at(0.5), at(0.99), lateness_ms.back());
}

// The median step time after `warmup` steps among the points of perf/step_time_s.
double medianStepTime(const std::vector<MetricPoint>& points, int64_t warmup) {
    std::vector<double> times;
    for (const MetricPoint& point : points)
        if (point.key == "perf/step_time_s" && point.step > warmup) times.push_back(point.value);
    return times.empty() ? std::nan("") : median(times);
}

// One run of the tiny preset, measured by its own step times: bare (a session and the one
// subscription that collects the times), recorded (+ the store writer), or in the window
// (+ the bridge, the store writer and the live plots redrawing).
double threadCpuMs();

// What one live redraw of the Training tab costs: the window at 1280 x 800 with 200 steps of the
// tiny preset's curves drawn, then per new step: its points in, and the coalesced redraw.
void monitorTick() {
    RunConfig config = builtinTinyConfig();
    config.train.steps = 500;
    MainWindow window(config, QStringLiteral("tiny"));
    window.resize(1280, 800);
    window.show();
    window.plots()->resetRun(config);
    std::mt19937 rng(5);
    auto stepPoints = [&](int64_t s) {
        const double wall = s * 0.05;
        QVector<MetricPoint> points;
        points.push_back(MetricPoint{s, s * 2048, wall, "train/loss", lossAt(s * 100, rng)});
        points.push_back(MetricPoint{s, s * 2048, wall, "train/tokens", double(s * 2048)});
        points.push_back(MetricPoint{s, s * 2048, wall, "train/grad_norm", 0.1 * lossAt(s * 100, rng)});
        points.push_back(MetricPoint{s, s * 2048, wall, "train/lr", 1e-3 * std::min(1.0, s / 20.0)});
        points.push_back(MetricPoint{s, s * 2048, wall, "perf/tokens_per_s", 40000 + 1000 * lossAt(s, rng)});
        for (const char* kind : {"allocated", "peak", "reserved"})
            points.push_back(MetricPoint{s, s * 2048, wall, std::string("mem/cpu0/") + kind + "_bytes", 3e8 + s * 1e5});
        return points;
    };
    for (int64_t s = 1; s <= 200; ++s) window.plots()->addPoints(stepPoints(s));
    window.plots()->flushReplot();
    QCoreApplication::processEvents();
    std::vector<double> ticks, cpu;
    for (int64_t s = 201; s <= 400; ++s) {
        window.plots()->addPoints(stepPoints(s));
        QElapsedTimer one;
        one.start();
        const double cpu_before = threadCpuMs();
        window.plots()->flushReplot();
        QCoreApplication::processEvents();  // the paint events the redraw posted
        ticks.push_back(one.nsecsElapsed() / 1e6);
        cpu.push_back(threadCpuMs() - cpu_before);
    }
    std::printf("{\"bench\": \"monitor_tick\", \"redraw_ms_median\": %.2f, \"redraw_cpu_ms_median\": %.2f}\n",
                median(ticks), median(cpu));
}

// The Monitor following a run that is already a million steps long, as on a GPU (a step's
// points every 33 ms): redraws per second, the GUI thread's CPU share, and how late a 10 ms
// timer fires meanwhile (what a user's click waits).
void longRun(int64_t steps, int seconds, const char* screenshot) {
    MetricPlots plots;
    plots.resize(1280, 800);
    plots.show();
    RunConfig config;
    config.train.steps = steps + 10'000;
    plots.resetRun(config);
    std::mt19937 rng(4);
    auto stepPoints = [&](int64_t s) {
        const double wall = s * 0.01;
        QVector<MetricPoint> points;
        points.push_back(MetricPoint{s, s * 1024, wall, "train/loss", lossAt(s, rng)});
        points.push_back(MetricPoint{s, s * 1024, wall, "train/tokens", double(s * 1024)});
        points.push_back(MetricPoint{s, s * 1024, wall, "train/grad_norm", 0.1 * lossAt(s, rng)});
        points.push_back(MetricPoint{s, s * 1024, wall, "train/lr", 3e-4});
        points.push_back(MetricPoint{s, s * 1024, wall, "perf/tokens_per_s", 20000 + 1000 * lossAt(s, rng)});
        return points;
    };
    for (int64_t first = 1; first <= steps; first += 1000) {
        QVector<MetricPoint> batch;
        for (int64_t s = first; s < first + 1000 && s <= steps; ++s) batch += stepPoints(s);
        plots.addPoints(batch);
    }
    plots.flushReplot();
    {
        QElapsedTimer t;
        t.start();
        plots.replot(QCustomPlot::rpImmediateRefresh);
        const double draw_ms = t.nsecsElapsed() / 1e6;
        t.restart();
        plots.flushReplot();
        std::printf("{\"bench\": \"long_run_redraw\", \"replot_ms\": %.1f, \"fit_and_replot_ms\": %.1f}\n", draw_ms,
                    t.nsecsElapsed() / 1e6);
    }
    int replots = 0;
    QObject::connect(&plots, &QCustomPlot::afterReplot, [&] { ++replots; });
    int64_t next = steps + 1;
    QTimer feed;
    feed.setInterval(33);
    QObject::connect(&feed, &QTimer::timeout, [&] { plots.addPoints(stepPoints(next++)); });
    LatenessProbe probe;
    const double cpu_before = threadCpuMs();
    QElapsedTimer wall;
    wall.start();
    feed.start();
    probe.start();
    QEventLoop loop;
    QTimer::singleShot(seconds * 1000, &loop, &QEventLoop::quit);
    loop.exec();
    const double elapsed_ms = wall.nsecsElapsed() / 1e6;
    const double cpu_ms = threadCpuMs() - cpu_before;
    const std::vector<double> lateness_ms = probe.stop();
    if (screenshot) {
        plots.replot(QCustomPlot::rpImmediateRefresh);
        plots.grab().save(QString::fromLocal8Bit(screenshot));
    }
    std::printf("{\"bench\": \"long_run_follow\", \"steps\": %lld, \"replots_per_s\": %.1f, "
                "\"gui_thread_cpu_pct\": %.0f, \"late_ms_median\": %.1f, \"late_ms_p99\": %.1f, "
                "\"late_ms_max\": %.1f, \"replot_interval_ms\": %d}\n",
                (long long)steps, replots * 1000.0 / elapsed_ms, 100.0 * cpu_ms / elapsed_ms,
                lateness_ms[lateness_ms.size() / 2], lateness_ms[size_t(0.99 * (lateness_ms.size() - 1))],
                lateness_ms.back(), plots.replotIntervalMs());
}

// How late a step's loss reaches the screen while the window trains the tiny preset: from the
// moment the rank published it (the session's start + its wall_time) to the end of the redraw
// that first drew it. `drain_ms` > 0 drains at that pace instead of the run's own.
void pointToScreen(int64_t steps, int drain_ms) {
    QTemporaryDir store;
    qputenv("TRAINBENCH_STORE", store.path().toUtf8());
    RunConfig config = builtinTinyConfig();
    config.train.steps = steps;
    config.train.eval_every = 0;
    MainWindow window(config, QStringLiteral("tiny"));
    window.resize(1280, 800);
    window.show();
    std::vector<double> waiting_wall, latency_ms;
    QObject::connect(window.bridge(), &EngineBridge::pointsArrived, [&](const QVector<MetricPoint>& batch) {
        for (const MetricPoint& point : batch)
            if (point.key == "train/loss") waiting_wall.push_back(point.wall_time);
    });
    QObject::connect(window.plots(), &QCustomPlot::afterReplot, [&] {
        const auto now = std::chrono::steady_clock::now();
        const auto origin = window.bridge()->runStartedAt();
        for (double wall : waiting_wall)
            latency_ms.push_back(std::chrono::duration<double, std::milli>(now - origin).count() - wall * 1e3);
        waiting_wall.clear();
    });
    QEventLoop loop;
    QObject::connect(window.bridge(), &EngineBridge::runFinished, &loop, &QEventLoop::quit);
    QTimer::singleShot(0, [&] {
        window.startRun();
        if (drain_ms > 0) window.bridge()->setDrainIntervalMs(drain_ms);
    });
    loop.exec();
    std::sort(latency_ms.begin(), latency_ms.end());
    std::printf("{\"bench\": \"point_to_screen\", \"steps\": %lld, \"points\": %zu, \"drain_ms\": %d, "
                "\"latency_ms_median\": %.1f, \"latency_ms_p99\": %.1f, \"latency_ms_max\": %.1f}\n",
                (long long)steps, latency_ms.size(), window.bridge()->drainIntervalMs(), latency_ms[latency_ms.size() / 2],
                latency_ms[size_t(0.99 * (latency_ms.size() - 1))], latency_ms.back());
}

// CPU time of the calling thread, in milliseconds.
double threadCpuMs() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

// The GUI thread's CPU time per training step while the window trains (`window` variant).
std::vector<double> gui_cpu_ms_per_step;

double stepTimeOf(const char* variant, int64_t steps, int64_t warmup) {
    QTemporaryDir store;
    qputenv("TRAINBENCH_STORE", store.path().toUtf8());
    RunConfig config = builtinTinyConfig();
    config.train.steps = steps;
    config.train.eval_every = 0;
    config.train.checkpoint_every = 0;
    std::vector<MetricPoint> points;
    if (std::string(variant) == "window") {
        MainWindow window(config, QStringLiteral("tiny"));
        window.resize(1280, 800);
        window.show();
        QEventLoop loop;
        QObject::connect(window.bridge(), &EngineBridge::pointsArrived, [&](const QVector<MetricPoint>& batch) {
            points.insert(points.end(), batch.begin(), batch.end());
        });
        QObject::connect(window.bridge(), &EngineBridge::runFinished, &loop, &QEventLoop::quit);
        double cpu_at_start = 0;
        QTimer::singleShot(0, [&] {
            window.startRun();
            cpu_at_start = threadCpuMs();
        });
        loop.exec();
        gui_cpu_ms_per_step.push_back((threadCpuMs() - cpu_at_start) / double(steps));
        return medianStepTime(points, warmup);
    }
    TrainingSession session(config, SessionOptions{});
    auto subscription = session.bus().subscribe();
    std::unique_ptr<RunRecorder> recorder;
    if (std::string(variant) == "recorded")
        recorder = std::make_unique<RunRecorder>(store.path().toStdString(), session, "bench");
    session.start();
    session.wait();
    if (recorder) recorder->finish(session.summary());
    BusBatch batch = subscription->drain();
    return medianStepTime(batch.points, warmup);
}

// What watching costs the run: median step time bare, recorded, and in the live window,
// alternated over `rounds`.
void metricsOverhead(int64_t steps, int rounds) {
    const char* variants[] = {"bare", "recorded", "window"};
    std::vector<double> times[3];
    for (int round = 0; round < rounds; ++round)
        for (int v = 0; v < 3; ++v) times[v].push_back(stepTimeOf(variants[v], steps, 10));
    const double bare = median(times[0]);
    std::printf("{\"bench\": \"metrics_overhead\", \"steps\": %lld, \"rounds\": %d, \"step_ms_bare\": %.2f, "
                "\"step_ms_recorded\": %.2f, \"step_ms_window\": %.2f, \"recorded_overhead_pct\": %.1f, "
                "\"window_overhead_pct\": %.1f, \"gui_thread_cpu_ms_per_step\": %.2f}\n",
                (long long)steps, rounds, bare * 1e3, median(times[1]) * 1e3, median(times[2]) * 1e3,
                (median(times[1]) / bare - 1) * 100, (median(times[2]) / bare - 1) * 100, median(gui_cpu_ms_per_step));
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    // `bench_gui overhead` measures only what watching costs a run.
    if (argc > 1 && std::string(argv[1]) == "overhead") {
        metricsOverhead(80, argc > 2 ? std::max(1, std::atoi(argv[2])) : 3);
        return 0;
    }
    // `bench_gui screen`: how late a point reaches the screen.
    if (argc > 1 && std::string(argv[1]) == "screen") {
        pointToScreen(200, 0);                                // a CPU run's pace
        pointToScreen(200, EngineBridge::kDrainIntervalMs);  // a GPU run's
        return 0;
    }
    // `bench_gui longrun [PNG]`: following a run a million steps long (and how it looks).
    if (argc > 1 && std::string(argv[1]) == "longrun") {
        longRun(1'000'000, 5, argc > 2 ? argv[2] : nullptr);
        return 0;
    }
    // `bench_gui ingest`: only the Monitor's 1M-step ingest.
    if (argc > 1 && std::string(argv[1]) == "ingest") {
        ingest(1'000'000);
        return 0;
    }
    // `bench_gui tick`: one live redraw of the Training tab.
    if (argc > 1 && std::string(argv[1]) == "tick") {
        monitorTick();
        return 0;
    }
    // `bench_gui window`: one run in the live window (to profile the GUI thread).
    if (argc > 1 && std::string(argv[1]) == "window") {
        const double step_s = stepTimeOf("window", 80, 10);
        std::printf("{\"bench\": \"window\", \"step_ms\": %.2f, \"gui_thread_cpu_ms_per_step\": %.2f}\n",
                    step_s * 1e3, gui_cpu_ms_per_step.back());
        return 0;
    }
    // `bench_gui load`: only the 1M-point store read.
    if (argc > 1 && std::string(argv[1]) == "load") {
        loadFromStore(1'000'000);
        return 0;
    }
    // `bench_gui replot`: only the 10 x 1M redraws.
    if (argc > 1 && std::string(argv[1]) == "replot") {
        replotManyRuns(10, 1'000'000);
        return 0;
    }
    ingest(1'000'000);
    replotManyRuns(10, 1'000'000);
    loadFromStore(1'000'000);
    eventLoopLatency(300);
    return 0;
}
