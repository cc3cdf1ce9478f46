// Run store write benchmark: how many metric points per second one SQLite transaction size
// sustains, and how long a point takes from the bus to a reader in another connection.
//
//   build/bin/bench_store_write [FOLDER]
//
// Prints a Markdown table for docs/BENCHMARKS.md. FOLDER (default: a fresh folder under /tmp)
// should be on the disk the store will live on.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "trainbench/metric_bus.h"
#include "trainbench/run_store.h"
#include "trainbench/store_writer.h"

using namespace trainbench;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Points as a training step publishes them: a handful of keys per step.
std::vector<MetricPoint> stepPoints(int64_t step) {
    static const char* keys[] = {"train/loss", "train/lr", "train/grad_norm", "perf/tokens_per_s", "train/tokens"};
    std::vector<MetricPoint> out;
    for (const char* key : keys) out.push_back({step, step * 4096, 0.01 * double(step), key, 1.0 / double(step + 1)});
    return out;
}

RunRecord benchRun(const std::string& id) {
    RunRecord r;
    r.run_id = id;
    r.name = id;
    r.config_json = "{}";
    return r;
}

// Points per second when every transaction carries `batch` points.
double commitRate(RunStore& store, const std::string& run_id, int64_t batch, int64_t total_points) {
    std::vector<MetricPoint> points;
    int64_t step = 0;
    const auto start = Clock::now();
    for (int64_t written = 0; written < total_points; written += batch) {
        points.clear();
        while (int64_t(points.size()) < batch) {
            auto more = stepPoints(++step);
            points.insert(points.end(), more.begin(), more.end());
        }
        points.resize(batch);
        store.commitBatch(run_id, points, {});
    }
    return double(total_points) / secondsSince(start);
}

// From publish to visible in a second connection, through the writer thread (period 500 ms).
std::vector<double> readerLatencies(const std::string& folder, int samples) {
    MetricBus bus;
    {
        RunStore owner(folder);
        owner.createRun(benchRun("latency"));
    }
    StoreWriter writer(folder, "latency", bus.subscribe());
    RunStore reader(folder);
    std::vector<double> latencies;
    for (int i = 1; i <= samples; ++i) {
        const auto published = Clock::now();
        bus.publish(stepPoints(i));
        while (reader.metrics("latency", "train/loss").size() < size_t(i)) usleep(2000);
        latencies.push_back(secondsSince(published));
        usleep(137000);  // off the writer's period, so samples land at different phases
    }
    writer.stop();
    return latencies;
}

void removeStoreFiles(const std::string& folder) {
    for (const char* name : {"/runs.db", "/runs.db-wal", "/runs.db-shm"}) unlink((folder + name).c_str());
}

}  // namespace

int main(int argc, char** argv) {
    char scratch[] = "/tmp/bench-store-XXXXXX";
    const std::string folder = argc > 1 ? std::string(argv[1]) : std::string(mkdtemp(scratch));
    // Starts from an empty store. (Not std::filesystem::remove_all: libtorch exports a broken copy.)
    removeStoreFiles(folder);
    std::printf("store: %s/runs.db\n\n", folder.c_str());
    {
        RunStore store(folder);
        std::printf("| points per transaction | points/s | transactions/s |\n|---|---|---|\n");
        for (int64_t batch : {1, 10, 100, 1000, 10000}) {
            const std::string id = "batch-" + std::to_string(batch);
            store.createRun(benchRun(id));
            const int64_t total = batch == 1 ? 2000 : std::max<int64_t>(20000, batch * 20);
            const double rate = commitRate(store, id, batch, total);
            std::printf("| %lld | %.0f | %.1f |\n", (long long)batch, rate, rate / double(batch));
        }
        // Reading one key of one run back, the GUI's load path.
        const auto start = Clock::now();
        const size_t n = store.metrics("batch-10000", "train/loss").size();
        std::printf("\nload one key (%zu points of 200,000 in the run): %.1f ms\n", n, 1e3 * secondsSince(start));
    }
    auto latencies = readerLatencies(folder, 20);
    std::sort(latencies.begin(), latencies.end());
    std::printf("bus -> reader latency over %zu points: median %.0f ms, max %.0f ms\n", latencies.size(),
                1e3 * latencies[latencies.size() / 2], 1e3 * latencies.back());
    removeStoreFiles(folder);
    if (argc <= 1) rmdir(folder.c_str());
    return 0;
}
