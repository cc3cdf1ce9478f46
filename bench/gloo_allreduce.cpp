// Gloo's all-reduce rate between CPU ranks: each process of a launch (torchrun, srun) is one rank
// meeting the others through the launch's rendezvous, as a training run's ranks do; or, with
// --threads W, W rank threads of this process meeting through a HashStore. Sums fp32 buffers of
// 1, 16 and 64 MiB (or --mib's) `--repeats` times each after one warm-up, and rank 0 prints a
// JSON line per size: seconds per call and the bus rate, 2 (W - 1) / W x bytes / s (what a ring
// moves through each rank), in GB/s.
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/gloo_collectives.h"
#include "comm/rendezvous.h"
#include "trainbench/process_launch.h"

using namespace trainbench;

namespace {

void measure(Collectives& ranks, const std::vector<int>& sizes_mib, int repeats) {
    const int W = ranks.worldSize();
    for (int mib : sizes_mib) {
        std::vector<torch::Tensor> buffer{torch::ones({int64_t(mib) << 18})};  // mib MiB of fp32
        ranks.allReduce(buffer, ReduceOp::Sum);                                  // warm-up (connections, pages)
        ranks.barrier();
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < repeats; ++i) ranks.allReduce(buffer, ReduceOp::Sum);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
        const double bytes = double(mib) * (1 << 20);
        if (ranks.rank() == 0)
            std::printf("{\"engine\": \"gloo\", \"world_size\": %d, \"mib\": %d, \"seconds\": %.6f, \"bus_gb_per_s\": %.3f}\n",
                        W, mib, seconds, 2.0 * (W - 1) / W * bytes / seconds / 1e9);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes{1, 16, 64};
    int repeats = 10, threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--mib")) sizes = {std::atoi(argv[i + 1])};
    }
    torch::set_num_threads(1);
    const auto timeout = std::chrono::milliseconds(120000);
    try {
        if (threads > 0) {
            c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::HashStore>();
            std::vector<std::thread> ranks;
            for (int r = 0; r < threads; ++r)
                ranks.emplace_back([&, r] {
                    auto gloo = makeGlooCollectives(store, r, threads, timeout, false, GlooNetwork::Loopback);
                    measure(*gloo, sizes, repeats);
                });
            for (auto& t : ranks) t.join();
            return 0;
        }
        const auto launch = processLaunchFromEnvironment();
        if (!launch) {
            std::fprintf(stderr, "start this under torchrun (--nproc-per-node N --no-python) or srun, or pass --threads N\n");
            return 2;
        }
        auto store = processRendezvous(*launch, timeout);
        auto gloo = makeGlooCollectives(store, launch->rank, launch->world_size, timeout, true,
                                        launch->local_world_size >= launch->world_size ? GlooNetwork::Loopback
                                                                                       : GlooNetwork::Hostname);
        measure(*gloo, sizes, repeats);
        gloo->barrier();  // the store's server (rank 0 without an agent) leaves last
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 3;
    }
    return 0;
}
