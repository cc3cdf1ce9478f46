// RankTrainers on rank threads of one in-process hub, for suites that drive windows and
// updates by hand (the conformance probes): the setup a session would make, without one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <QtGlobal>

#include "kernels/cpu_kernels.h"
#include "memory/memory_account.h"
#include "comm/in_process_collectives.h"
#include "train/rank_trainer.h"

namespace trainbench {

struct RankThreadOptions {
    bool fp64 = false;               // parameters and gradients in fp64
    int64_t bucket_bytes = 25 << 20;  // every bucket, the first included
    bool host_mirror = false;            // PlacementQuery::host_step_on_cpu
    bool gradient_sums_on_host = false;  // PlacementQuery::gradient_sums_off_device (with host_mirror)
    bool gradient_sums_in_file = false;  // PlacementQuery::gradient_sums_in_file
    bool boundaries_in_file = false;     // PlacementQuery::boundaries_in_file
    // When set: one account per rank, its allocations counted there (peaks readable afterwards).
    std::vector<MemoryAccount*>* accounts = nullptr;
    // When set: one host account per rank (RankSetup::host_memory: what runtime.offload keeps there).
    std::vector<MemoryAccount*>* host_accounts = nullptr;
    std::string resume_from;  // RankSetup::resume_from: a checkpoint directory
    // Per rank: RankSetup::edit_micro_batch (empty: none).
    std::function<void(int rank, int64_t step, int64_t micro, MicroBatch& batch)> edit_micro_batch;
};

// The collectives a session makes for W rank threads: the world's, and under expert
// parallelism (EP > 1) the expert groups of EP consecutive ranks and the replica groups of the
// ranks with the same experts, linked to the world's hub (an abort reaches them all).
struct RankGroups {
    std::vector<std::unique_ptr<InProcessCollectives>> world, experts, replicas;
    RankGroups(int W, int EP) {
        auto hub = std::make_shared<CollectiveHub>(W, std::chrono::seconds(60));
        for (int r = 0; r < W; ++r) world.push_back(std::make_unique<InProcessCollectives>(hub, r, W));
        if (EP <= 1) return;
        std::vector<std::shared_ptr<CollectiveHub>> expert_hubs, replica_hubs;
        for (int g = 0; g < W / EP; ++g) expert_hubs.push_back(std::make_shared<CollectiveHub>(EP, std::chrono::seconds(60)));
        for (int g = 0; g < EP; ++g) replica_hubs.push_back(std::make_shared<CollectiveHub>(W / EP, std::chrono::seconds(60)));
        for (const auto& groups : {expert_hubs, replica_hubs})
            for (const auto& group : groups) CollectiveHub::link(hub, group);
        for (int r = 0; r < W; ++r) {
            experts.push_back(std::make_unique<InProcessCollectives>(expert_hubs[r / EP], r % EP, EP));
            replicas.push_back(std::make_unique<InProcessCollectives>(replica_hubs[r % EP], r / EP, W / EP));
        }
    }
};

// Runs `body(rank, collectives)` on W rank threads over one in-process hub; returns each rank's
// failure (empty: none). A failure aborts the hub, so the other ranks' collectives return.
inline std::vector<std::string> onCollectiveThreads(int W, const std::function<void(int, InProcessCollectives&)>& body) {
    auto hub = std::make_shared<CollectiveHub>(W, std::chrono::seconds(60));
    std::vector<std::string> failures(W);
    std::vector<std::thread> threads;
    for (int r = 0; r < W; ++r)
        threads.emplace_back([&, r] {
            try {
                InProcessCollectives collectives(hub, r, W);
                body(r, collectives);
            } catch (const std::exception& e) {
                failures[r] = e.what();
                hub->abort("rank failed");
            }
        });
    for (auto& t : threads) t.join();
    return failures;
}

// Runs `body(rank, trainer)` on each of the config's W rank threads, with a prepared trainer.
// An exception on any rank aborts the others; the first is fatal once all have joined.
inline void onRankTrainers(const RunConfig& config, const RankThreadOptions& options,
                           const std::function<void(int, RankTrainer&)>& body) {
    const int W = static_cast<int>(config.runtime.world_size);
    RunControl control;
    std::atomic<int64_t> completed{0};
    const int EP = static_cast<int>(config.runtime.expert_parallel);
    RankGroups groups(W, EP);
    auto& collectives = groups.world;
    auto& experts = groups.experts;
    auto& replicas = groups.replicas;
    if (options.accounts)
        while (static_cast<int>(options.accounts->size()) < W) options.accounts->push_back(newMemoryAccount());
    if (options.host_accounts)
        while (static_cast<int>(options.host_accounts->size()) < W) options.host_accounts->push_back(newMemoryAccount());
    std::vector<std::string> errors(W);
    std::vector<std::thread> threads;
    for (int r = 0; r < W; ++r)
        threads.emplace_back([&, r] {
            MemoryAccount* account = options.accounts ? (*options.accounts)[r] : nullptr;
            ScopedMemoryAccount scope(account);
            try {
                RankSetup setup;
                setup.config = &config;
                setup.rank = r;
                setup.world_size = W;
                setup.collectives = collectives[r].get();
                if (EP > 1) {
                    setup.expert_collectives = experts[r].get();
                    setup.replica_collectives = replicas[r].get();
                }
                setup.control = &control;
                setup.completed_steps = &completed;
                setup.started = std::chrono::steady_clock::now();
                setup.fp64 = options.fp64;
                setup.memory = account;
                if (options.host_accounts) setup.host_memory = (*options.host_accounts)[r];
                setup.resume_from = options.resume_from;
                setup.bucket_bytes = setup.first_bucket_bytes = options.bucket_bytes;
                PlacementQuery query;
                query.host_step_on_cpu = options.host_mirror;
                query.gradient_sums_off_device = options.gradient_sums_on_host;
                query.gradient_sums_in_file = options.gradient_sums_in_file;
                query.boundaries_in_file = options.boundaries_in_file;
                query.fp64 = options.fp64;
                query.cpu_autocast = !kernels::cpuKernelsEnabled();
                setup.placement = placementFor(*setup.config, query);
                if (options.edit_micro_batch)
                    setup.edit_micro_batch = [&, r](int64_t step, int64_t micro, MicroBatch& batch) {
                        options.edit_micro_batch(r, step, micro, batch);
                    };
                RankTrainer trainer(setup);
                trainer.prepare();
                body(r, trainer);
            } catch (const std::exception& e) {
                errors[r] = e.what();
                collectives[r]->abort(e.what());
            }
        });
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
        if (!e.empty()) qFatal("ranks failed: %s", e.c_str());
}

// Optimizer steps [first, first + steps) on a prepared trainer, each window complete (else it
// throws); `seen` gets each window's result.
inline void trainSteps(RankTrainer& trainer, int64_t steps, const std::function<void(const WindowResult&)>& seen = {},
                       int64_t first = 0) {
    for (int64_t step = first; step < first + steps; ++step) {
        WindowResult window;
        if (trainer.accumulateWindow(step, window) != WindowOutcome::Complete) throw std::runtime_error("window");
        trainer.applyUpdate(step, window);
        if (seen) seen(window);
    }
}

}  // namespace trainbench
