// TensorBoard event files: what writing costs. The file writer alone (scalars per second, bytes
// per scalar, a flush), and what the training loop pays: one publish of a step's points on a
// bus with the store's subscriber only, and with the live recorder's subscription beside it, and
// how long after the bus closes the recorder has written everything.
//
//   build/bin/bench_tensorboard_write [FOLDER] [POINTS_PER_STEP]
//
// Prints Markdown for docs/BENCHMARKS.md. FOLDER (default: a fresh folder under /tmp) should be on
// the disk the event files will live on; POINTS_PER_STEP default 45 (the tiny preset publishes
// about that many keys a step).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "files/remove_tree.h"
#include "tensorboard/event_file_writer.h"
#include "tensorboard/tensorboard_recorder.h"
#include "trainbench/metric_bus.h"

using namespace trainbench;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<std::string> stepKeys(int count) {
    std::vector<std::string> keys;
    for (int i = 0; i < count; ++i) keys.push_back("bench/group" + std::to_string(i % 5) + "/key" + std::to_string(i));
    return keys;
}

std::vector<MetricPoint> stepPoints(const std::vector<std::string>& keys, int64_t step) {
    std::vector<MetricPoint> points;
    for (size_t i = 0; i < keys.size(); ++i) points.push_back({step, step * 4096, 0.01 * double(step), keys[i], 1.0 / double(step + i + 1)});
    return points;
}

// Median seconds per publish of one step's points over `steps` steps, with the subscriptions given
// drained by their own threads (as the store writer and the recorder do).
double medianPublish(MetricBus& bus, const std::vector<std::string>& keys, int64_t steps) {
    std::vector<double> times;
    for (int64_t step = 1; step <= steps; ++step) {
        auto points = stepPoints(keys, step);
        const auto t = Clock::now();
        bus.publish(std::move(points));
        times.push_back(secondsSince(t));
        if (step % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // steps take time
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const std::string folder = argc > 1 ? argv[1] : "/tmp/bench-tensorboard-" + std::to_string(getpid());
    const int per_step = argc > 2 ? std::stoi(argv[2]) : 45;
    std::filesystem::create_directories(folder);
    const auto keys = stepKeys(per_step);

    // The file writer alone.
    {
        const int64_t total = 2'000'000;
        const std::string path = folder + "/writer.tfevents";
        tensorboard::EventFileWriter file(path);
        const auto t = Clock::now();
        for (int64_t i = 0; i < total; ++i)
            file.addScalar(keys[i % keys.size()], i / int64_t(keys.size()), 1.7e9 + 0.001 * double(i), float(i));
        file.close();
        const double s = secondsSince(t);
        std::printf("| file writer | %lld scalars | %.0f scalars/s | %.1f bytes/scalar | %.1f MB/s |\n", (long long)total,
                    double(total) / s, double(file.bytesWritten()) / double(total), double(file.bytesWritten()) / s / 1e6);
    }

    // A flush of one step's records.
    {
        tensorboard::EventFileWriter file(folder + "/flush.tfevents");
        std::vector<double> times;
        for (int step = 0; step < 200; ++step) {
            for (const auto& key : keys) file.addScalar(key, step, 1.7e9, 1.0f);
            const auto t = Clock::now();
            file.flush();
            times.push_back(secondsSince(t));
        }
        std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
        std::printf("| flush of one step (%d scalars) | median %.1f us |\n", per_step, times[times.size() / 2] * 1e6);
    }

    // The training loop's side: publish with one drained subscriber, then with the recorder beside it.
    const int64_t steps = 20'000;
    for (bool with_recorder : {false, true}) {
        MetricBus bus;
        auto store_side = bus.subscribe();
        std::atomic<bool> done{false};
        std::thread drain([&] {
            while (!done) store_side->waitAndDrain(std::chrono::milliseconds(500));
        });
        std::unique_ptr<tensorboard::TensorBoardRecorder> recorder;
        if (with_recorder) {
            recorder = std::make_unique<tensorboard::TensorBoardRecorder>(folder, "bench-run");
            recorder->start(bus, "{}", 1.7e9);
        }
        const auto run = Clock::now();
        const double median = medianPublish(bus, keys, steps);
        const double publishing = secondsSince(run);
        bus.close();
        const auto closing = Clock::now();
        if (recorder) recorder->stop();
        const double tail = secondsSince(closing);
        done = true;
        drain.join();
        std::printf("| publish, %s | %lld steps of %d points | median %.2f us/step | %lld steps in %.2f s; written %.3f s after the close |\n",
                    with_recorder ? "store + TensorBoard recorder" : "store subscriber only", (long long)steps, per_step,
                    median * 1e6, (long long)steps, publishing, tail);
    }
    removeTree(folder);  // not std::filesystem::remove_all (files/remove_tree.h)
    return 0;
}
