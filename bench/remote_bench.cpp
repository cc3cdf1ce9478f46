// The remote store's numbers: a run of a million points opened over ssh (the first fetch into the
// copy, then reopened from it) and the delay from a point committed on the node to the end of the
// window's redraw that first drew it. Prints one JSON object per measurement. Run offscreen:
//   QT_QPA_PLATFORM=offscreen bench_remote CLI [HOST]
// CLI: trainbench-cli as the host runs it; HOST: the ssh destination (default localhost), reached
// with the program TRAINBENCH_SSH names (default ssh, which must log in there without a prompt).
// The "node's" store is a temporary folder of this machine, written by a thread of this process.
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <qcustomplot.h>

#include "app/main_window.h"
#include "monitor/metric_plots.h"
#include "runs/remote_feed.h"
#include "runs/remote_location.h"
#include "runs/remote_run_sync.h"
#include "runs/run_ref.h"
#include "trainbench/presets.h"
#include "trainbench/run_store.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> values, double q) {
    std::sort(values.begin(), values.end());
    return values[std::min(values.size() - 1, size_t(q * double(values.size())))];
}

std::vector<MetricPoint> stepPoints(int64_t step) {
    std::vector<MetricPoint> points;
    for (const char* key : {"train/loss", "train/lr", "train/grad_norm", "perf/tokens_per_s"})
        points.push_back({step, step * 2048, 0.01 * double(step), key, 1.0 / double(step)});
    return points;
}

// Registers a run as a training process does (running, owned by this process).
void createRun(RunStore& store, const std::string& run_id) {
    RunRecord run;
    run.run_id = run_id;
    run.name = run_id;
    run.config_json = "{}";
    store.createRun(run);
}

// Follows `run_id` until its end is in the copy and the feed has delivered it; the points delivered.
size_t followToTheEnd(const RemoteLocation& location, const std::string& run_id, double* seconds) {
    RemoteFeed feed(location, QString::fromStdString(run_id));
    size_t points = 0;
    bool finished = false;
    QEventLoop loop;
    QObject::connect(&feed, &RunFeed::pointsArrived, [&](const QVector<MetricPoint>& batch) { points += size_t(batch.size()); });
    const auto check = [&] {
        if (finished && feed.sync()->state() == RemoteRunSync::State::Ended) loop.quit();
    };
    QObject::connect(&feed, &RunFeed::runFinished, [&] {
        finished = true;
        check();
    });
    QObject::connect(feed.sync(), &RemoteRunSync::stateChanged, [&](RemoteRunSync::State state, const QString& text) {
        if (state == RemoteRunSync::State::Failed) {
            std::fprintf(stderr, "bench_remote: %s\n", qPrintable(text));
            loop.quit();
        }
        check();
    });
    QElapsedTimer clock;
    clock.start();
    feed.start();
    loop.exec();
    *seconds = double(clock.nsecsElapsed()) / 1e9;
    return points;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_remote TRAINBENCH_CLI [HOST]\n");
        return 2;
    }
    QTemporaryDir node, cache;
    qputenv("TRAINBENCH_REMOTE_CACHE", cache.path().toLocal8Bit());
    const QString host = argc > 2 ? QString::fromLocal8Bit(argv[2]) : QStringLiteral("localhost");
    RemoteLocation location = *RemoteLocation::parse(host + QLatin1Char(':') + node.path(), nullptr);
    location.cli = QString::fromLocal8Bit(argv[1]);
    const std::string via = RemoteLocation::sshProgram().toStdString();

    // A finished run of a million points: 250,000 steps of four keys.
    {
        RunStore store(node.path().toStdString());
        createRun(store, "million");
        std::vector<MetricPoint> batch;
        for (int64_t step = 1; step <= 250'000; ++step) {
            for (MetricPoint& p : stepPoints(step)) batch.push_back(std::move(p));
            if (batch.size() >= 40'000) {
                store.commitBatch("million", batch, {});
                batch.clear();
            }
        }
        store.commitBatch("million", batch, {});
        store.finishRun("million", "completed", 250'000, 1e-5, "");
    }
    // `follow` alone on the node, its stream counted and dropped: what the first read's node side costs.
    {
        QProcess follow;
        QElapsedTimer clock;
        clock.start();
        follow.start(location.cli, {QStringLiteral("follow"), QStringLiteral("million"), QStringLiteral("--store"),
                                    node.path(), QStringLiteral("--json")});
        qint64 bytes = 0;
        while (follow.state() != QProcess::NotRunning || follow.bytesAvailable() > 0) {
            follow.waitForReadyRead(100);
            bytes += follow.readAllStandardOutput().size();
        }
        std::printf("{\"bench\": \"follow_alone\", \"points\": 1000000, \"seconds\": %.2f, \"stream_bytes\": %lld, "
                    "\"bytes_per_point\": %.1f}\n",
                    double(clock.nsecsElapsed()) / 1e9, (long long)bytes, double(bytes) / 1e6);
    }
    double first_s = 0, again_s = 0;
    const size_t first = followToTheEnd(location, "million", &first_s);
    const size_t again = followToTheEnd(location, "million", &again_s);
    std::printf("{\"bench\": \"remote_open\", \"via\": \"%s\", \"points\": %zu, \"first_fetch_s\": %.2f, "
                "\"reopen_points\": %zu, \"reopen_s\": %.2f}\n",
                via.c_str(), first, first_s, again, again_s);

    // A live run: a step every 100 ms, watched in the window; each loss point's delay from its
    // commit on the node to the end of the redraw that first drew it.
    constexpr int64_t kSteps = 150;
    std::vector<std::atomic<int64_t>> committed_ns(kSteps + 1);
    {
        RunStore store(node.path().toStdString());
        createRun(store, "live");
    }
    QTemporaryDir local;
    qputenv("TRAINBENCH_STORE", local.path().toUtf8());
    MainWindow window(builtinTinyConfig(), QStringLiteral("tiny"));
    window.resize(1280, 800);
    window.show();
    rememberRemote(location);
    window.watchRun(runRefKey(location, QStringLiteral("live")));
    std::vector<int64_t> waiting;  // steps delivered, not yet drawn
    std::vector<double> delays_ms;
    QEventLoop loop;
    QObject::connect(window.storeTail(), &RunFeed::pointsArrived, [&](const QVector<MetricPoint>& batch) {
        for (const MetricPoint& p : batch)
            if (p.key == "train/loss" && p.step <= kSteps && committed_ns[size_t(p.step)] > 0) waiting.push_back(p.step);
    });
    QObject::connect(window.plots(), &QCustomPlot::afterReplot, [&] {
        const int64_t now = Clock::now().time_since_epoch().count();
        for (int64_t step : waiting) delays_ms.push_back(double(now - committed_ns[size_t(step)]) / 1e6);
        waiting.clear();
    });
    QObject::connect(window.storeTail(), &RunFeed::runFinished, &loop, &QEventLoop::quit);
    std::thread writer([&] {
        RunStore store(node.path().toStdString());
        std::this_thread::sleep_for(std::chrono::seconds(2));  // connected and live by then
        for (int64_t step = 1; step <= kSteps; ++step) {
            committed_ns[size_t(step)] = Clock::now().time_since_epoch().count();
            store.commitBatch("live", stepPoints(step), {});
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        store.finishRun("live", "completed", kSteps, 1.0, "");
    });
    loop.exec();
    writer.join();
    if (delays_ms.empty()) {
        std::fprintf(stderr, "bench_remote: no live point arrived\n");
        return 1;
    }
    std::printf("{\"bench\": \"remote_point_to_screen\", \"via\": \"%s\", \"points\": %zu, \"median_ms\": %.0f, "
                "\"p90_ms\": %.0f, \"max_ms\": %.0f}\n",
                via.c_str(), delays_ms.size(), percentile(delays_ms, 0.5), percentile(delays_ms, 0.9),
                percentile(delays_ms, 1.0));
    return 0;
}
