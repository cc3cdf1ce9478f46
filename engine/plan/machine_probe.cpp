// The machine probe: each rate the best of a few repetitions (the first also warms the pages).
#include "trainbench/machine_probe.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "comm/in_process_collectives.h"
#include "offload/direct_file.h"
#include "model/transformer.h"
#include "parallel/fused_adamw.h"
#include "trainbench/memory_plan.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// `work` units per second of `once` at its best over `timed` runs after an untimed first (which
// warms the pages and the caches), with ATen's pool at `threads` meanwhile.
double bestRate(int threads, int timed, double work, const std::function<void()>& once) {
    struct PoolThreads {
        int previous = torch::get_num_threads();
        explicit PoolThreads(int threads) { torch::set_num_threads(std::max(1, threads)); }
        ~PoolThreads() { torch::set_num_threads(previous); }
    } pool(threads);
    once();
    double fastest = 0;
    for (int repeat = 0; repeat < timed; ++repeat) {
        const auto start = Clock::now();
        once();
        const double seconds = secondsSince(start);
        if (fastest == 0 || seconds < fastest) fastest = seconds;
    }
    return fastest > 0 ? work / fastest : 0.0;
}

// Bytes read plus written a second by a copy split over `threads` threads of its own.
double copyRate(int threads, int64_t bytes) {
    std::vector<char> from(static_cast<size_t>(bytes), 1), to(static_cast<size_t>(bytes), 0);
    const int64_t share = (bytes + threads - 1) / threads;
    return bestRate(torch::get_num_threads(), 3, 2.0 * double(bytes) / 1e9, [&] {
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t)
            workers.emplace_back([&, t] {
                const int64_t begin = std::min(bytes, t * share), end = std::min(bytes, begin + share);
                std::memcpy(to.data() + begin, from.data() + begin, static_cast<size_t>(end - begin));
            });
        for (auto& w : workers) w.join();
    });
}

// TFLOP/s of fp32 matrix products.
double matmulRate(int threads) {
    const int64_t n = 2048;  // long enough per product (a few hundred ms on one core) to be steady
    const torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
    return bestRate(threads, 5, 2.0 * double(n * n * n) / 1e12, [&] { torch::mm(a, b); });
}

// The host step's kernel over `elements` fp32 parameters (16 bytes each of weights, gradients
// and moments: far beyond the caches at the probe's sizes), in the buckets' grouping of a few
// slices: billions of parameters a second.
double adamWRate(int threads, int64_t elements) {
    const int64_t slices = 4, per_slice = std::max<int64_t>(1, elements / slices);
    std::vector<torch::Tensor> weights, grads, averages, squares, steps;
    for (int64_t s = 0; s < slices; ++s) {
        weights.push_back(torch::randn({per_slice}));
        grads.push_back(torch::randn({per_slice}));
        averages.push_back(torch::zeros({per_slice}));
        squares.push_back(torch::zeros({per_slice}));
        steps.push_back(torch::zeros({}));
    }
    const AdamWHyper hyper{1e-4, 0.9, 0.95, 0.1, 1e-8};
    return bestRate(threads, 4, double(per_slice * slices) / 1e9, [&] {
        for (auto& step : steps) step.add_(1);
        fusedAdamWUpdate(weights, grads, averages, squares, steps, hyper, 1.0);
    });
}

}  // namespace

MachineProbe probeMachine(int threads, int64_t copy_bytes, const std::string& directory, int64_t directory_bytes,
                          const std::string& field) {
    MachineProbe probe;
    probe.threads = std::max(1, threads);
    // The node's figures on every core (its ranks share the host memory and the CPU step); a
    // rank's products on its share.
    const int node_threads = std::max<int>(probe.threads, int(std::thread::hardware_concurrency()));
    probe.host_copy_gbps = copyRate(node_threads, copy_bytes);
    probe.cpu_fp32_tflops = matmulRate(probe.threads);
    // (the copy's buffer size in parameters of 16 bytes: as far beyond the caches)
    probe.cpu_adamw_gparams = adamWRate(node_threads, std::max<int64_t>(1 << 20, copy_bytes / 16));
    if (directory.empty()) return probe;
    probe.directory = directory;
    probe.directory_bytes = alignedUp(directory_bytes);
    const std::string path = directory + "/trainbench-probe-" + std::to_string(getpid()) + ".tmp";
    try {
        DirectFile file(path, probe.directory_bytes);
        const int64_t chunk = std::min<int64_t>(probe.directory_bytes, 64 << 20);
        AlignedBuffer buffer(chunk);
        std::memset(buffer.data(), 0x5a, static_cast<size_t>(chunk));
        auto start = Clock::now();
        for (int64_t offset = 0; offset < probe.directory_bytes; offset += chunk)
            file.write(offset, buffer.data(), std::min(chunk, probe.directory_bytes - offset));
        file.waitAll();  // O_DIRECT: complete means on the device, not in the page cache
        probe.directory_write_gbps = double(probe.directory_bytes) / secondsSince(start) / 1e9;
        start = Clock::now();
        for (int64_t offset = 0; offset < probe.directory_bytes; offset += chunk) {
            file.wait(file.read(offset, buffer.data(), std::min(chunk, probe.directory_bytes - offset)));
        }
        probe.directory_read_gbps = double(probe.directory_bytes) / secondsSince(start) / 1e9;
    } catch (const std::runtime_error& e) {
        throw ConfigError(field, field + " (" + directory + "): cannot be probed: " + e.what() +
                                     "; give a writable directory on a local disk");
    }
    return probe;
}

double probeRankThreadCollectives(int ranks, int64_t bytes) {
    if (ranks < 2) return 0;
    // Whole elements, a multiple of the ranks (the reduce-scatter's equal slices).
    const int64_t n = std::max<int64_t>(ranks, bytes / 4 / ranks * ranks);
    auto hub = std::make_shared<CollectiveHub>(ranks, std::chrono::minutes(5));
    constexpr int kRounds = 4;  // the first warms the pages
    std::vector<double> round_s(kRounds, 0.0);
    std::vector<std::exception_ptr> failed(static_cast<size_t>(ranks));
    std::atomic<int> first_failed{-1};  // the cause; the others' are the abort it sent them
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
            try {
                InProcessCollectives comm(hub, r, ranks);
                torch::Tensor whole = torch::ones({n}), slice = torch::empty({n / ranks});
                for (int round = 0; round < kRounds; ++round) {
                    comm.barrier();
                    const auto start = Clock::now();
                    std::vector<torch::Tensor> reduced{whole};
                    comm.allReduce(reduced, ReduceOp::Sum);
                    comm.reduceScatterAsync(whole, slice)->wait();
                    comm.allGatherAsync(slice, whole)->wait();
                    if (r == 0) round_s[size_t(round)] = secondsSince(start);
                }
            } catch (...) {
                // (out of memory, say: the others are released, and the caller hears of it)
                failed[size_t(r)] = std::current_exception();
                int none = -1;
                first_failed.compare_exchange_strong(none, r);
                hub->abort("the probe's rank thread " + std::to_string(r) + " failed");
            }
        });
    for (auto& t : threads) t.join();
    if (first_failed >= 0) std::rethrow_exception(failed[size_t(first_failed.load())]);
    const double fastest = *std::min_element(round_s.begin() + 1, round_s.end());
    // The ring's bytes per rank for the three: 2n (W - 1) / W, then n (W - 1) / W twice.
    const double ring_bytes = 4.0 * double(n) * 4.0 * double(ranks - 1) / double(ranks);
    return fastest > 0 ? ring_bytes / fastest / 1e9 : 0.0;
}

double probeStepMfu(const RunConfig& config, int threads, double cpu_fp32_tflops) {
    if (cpu_fp32_tflops <= 0) return 0;
    // The planner's FLOPs of one micro-batch of this config (its recomputation counted).
    const double flops = predictStepTime(config, planMemory(config), TargetMachine{}).flops_per_micro_batch;
    torch::manual_seed(0);
    Transformer model(config.model);
    model->setRecomputation(recomputation(config.runtime));
    const int64_t m = std::max<int64_t>(1, config.train.micro_batch_size), T = config.train.seq_len;
    const torch::Tensor tokens = torch::randint(config.model.vocab_size, {m, T}, torch::kInt64);
    const torch::Tensor targets = torch::randint(config.model.vocab_size, {m, T}, torch::kInt64);
    const double achieved = bestRate(threads, 3, flops, [&] {
        for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
        model->loss(tokens, targets).token_loss_sum.backward();
    });
    return achieved / (cpu_fp32_tflops * 1e12);
}

std::string machineProbeToJson(const MachineProbe& p) {
    return nlohmann::json{{"threads", p.threads},
                          {"host_copy_gbps", p.host_copy_gbps},
                          {"cpu_fp32_tflops", p.cpu_fp32_tflops},
                          {"cpu_adamw_gparams", p.cpu_adamw_gparams},
                          {"step_mfu", p.step_mfu},
                          {"collective_ranks", p.collective_ranks},
                          {"rank_collectives_gbps", p.rank_collectives_gbps},
                          {"directory", p.directory},
                          {"directory_bytes", p.directory_bytes},
                          {"directory_write_gbps", p.directory_write_gbps},
                          {"directory_read_gbps", p.directory_read_gbps}}
        .dump();
}

int probeThreads(const RunConfig& config) {
    // As TrainingSession::start sets them: the rank threads share the cores, so a rank's products
    // run on its share (a GPU rank's host step too).
    if (config.runtime.threads > 0) return int(config.runtime.threads);
    const int64_t ranks = std::max<int64_t>(1, config.runtime.world_size);
    return int(std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()) / ranks));
}

TargetConfig withProbedRates(TargetConfig target, const MachineProbe& probe, bool cpu_ranks,
                             const std::string& offload_dir) {
    if (target.host_memory_gbps <= 0 && probe.host_copy_gbps > 0) target.host_memory_gbps = probe.host_copy_gbps;
    if (target.cpu_adamw_gparams <= 0 && probe.cpu_adamw_gparams > 0) target.cpu_adamw_gparams = probe.cpu_adamw_gparams;
    if (cpu_ranks && target.compute_tflops <= 0 && probe.cpu_fp32_tflops > 0) {
        // Their product is what a micro-batch reached; a step faster than the products' probe
        // (the engine's kernels beat a lone matrix product on a noisy core) raises the rate.
        const double mfu = probe.step_mfu > 0 ? probe.step_mfu : 1.0;
        target.compute_tflops = probe.cpu_fp32_tflops * std::max(1.0, mfu);
        target.mfu = std::min(1.0, mfu);
    }
    if (cpu_ranks && target.interconnect_gbps <= 0 && probe.rank_collectives_gbps > 0)
        target.interconnect_gbps = probe.rank_collectives_gbps;
    if (!probe.directory.empty() && probe.directory == offload_dir) {
        if (target.nvme_read_gbps <= 0 && probe.directory_read_gbps > 0) target.nvme_read_gbps = probe.directory_read_gbps;
        if (target.nvme_write_gbps <= 0 && probe.directory_write_gbps > 0)
            target.nvme_write_gbps = probe.directory_write_gbps;
    }
    return target;
}

}  // namespace trainbench
