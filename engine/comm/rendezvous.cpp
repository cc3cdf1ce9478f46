// Rendezvous stores: HashStore for threads, TCPStore for processes (served by torchrun's agent,
// or by rank 0), each attempt of a launch under its own prefix.
#include "comm/rendezvous.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdio>
#include <thread>

#include "comm/collectives.h"
#include "comm/roll_call.h"

namespace trainbench {
namespace {

// Every rank counts itself in, and leaves its own key; the last to come opens the door. A
// client of the agent's store is connected as soon as the agent listens, so the store alone does
// not wait for the others. When the door stays shut, the keys tell who never came.
void waitForEveryRank(c10d::Store& store, const ProcessLaunch& launch, std::chrono::milliseconds timeout) {
    store.set("joined/" + std::to_string(launch.rank), std::vector<uint8_t>{1});
    if (store.add("ranks_joined", 1) == launch.world_size) store.set("all_ranks_joined", std::vector<uint8_t>{1});
    try {
        store.wait({"all_ranks_joined"}, timeout);
    } catch (const std::exception&) {
        std::vector<int> missing;
        for (int r = 0; r < launch.world_size; ++r)
            if (!store.check({"joined/" + std::to_string(r)})) missing.push_back(r);
        throw CollectiveAborted(describeRanks(missing) + " of " + std::to_string(launch.world_size) +
                                " did not come to the rendezvous within runtime.comm_timeout_s (" +
                                std::to_string(timeout.count() / 1000) + " s): never started, or started with "
                                "another MASTER_ADDR:MASTER_PORT");
    }
}

}  // namespace

c10::intrusive_ptr<c10d::Store> threadRendezvous() { return c10::make_intrusive<c10d::HashStore>(); }

std::string rendezvousPrefix(const ProcessLaunch& launch) {
    return "trainbench/attempt_" + std::to_string(launch.restart_count);
}

c10::intrusive_ptr<c10d::Store> processRendezvous(const ProcessLaunch& launch, std::chrono::milliseconds timeout) {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(launch.master_port);
    options.isServer = launch.rank == 0 && !launch.agent_store;
    options.waitWorkers = false;  // waitForEveryRank counts, under the agent's store too
    options.timeout = timeout;
    const std::string where = launch.master_addr + ":" + std::to_string(launch.master_port);
    try {
        auto tcp = c10::make_intrusive<c10d::TCPStore>(launch.master_addr, options);
        auto store = c10::make_intrusive<c10d::PrefixStore>(rendezvousPrefix(launch), tcp);
        waitForEveryRank(*store, launch, timeout);
        return store;
    } catch (const std::exception& e) {
        throw CollectiveAborted("rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.world_size) +
                                " could not meet the others at " + where + " (MASTER_ADDR:MASTER_PORT, " +
                                (launch.agent_store ? "served by torchrun's agent" : "served by rank 0") +
                                "): " + e.what());
    }
}

std::string checkRendezvous(const ProcessLaunch& launch, double timeout_s) {
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    const auto start = std::chrono::steady_clock::now();
    auto store = processRendezvous(launch, timeout);
    const double met_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Each rank leaves a key for the others and reads theirs: the store carries data both ways.
    const std::string mine = std::to_string(launch.rank);
    store->set("check/rank" + mine, std::vector<uint8_t>(mine.begin(), mine.end()));
    for (int r = 0; r < launch.world_size; ++r) {
        const auto bytes = store->get("check/rank" + std::to_string(r));  // waits for it (timeout)
        if (std::string(bytes.begin(), bytes.end()) != std::to_string(r))
            throw CollectiveAborted("rendezvous check: rank " + std::to_string(r) + "'s key holds another value");
    }
    // The rank that serves the store stays until every other rank has made its last call on it;
    // the others leave at once (a call after the server has gone would fail).
    int64_t done = store->add("check/done", 1);
    const bool serves = launch.rank == 0 && !launch.agent_store;
    while (serves && done < launch.world_size) {
        if (std::chrono::steady_clock::now() - start > timeout)
            throw CollectiveAborted("rendezvous check: not every rank finished within " + std::to_string(timeout_s) + " s");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        done = store->add("check/done", 0);
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"rendezvous\": \"ok\", \"rank\": %d, \"world_size\": %d, \"local_rank\": %d, \"launcher\": \"%s\", "
                  "\"store\": \"%s\", \"attempt\": %d, \"met_s\": %.3f}",
                  launch.rank, launch.world_size, launch.local_rank, launch.launcher.c_str(),
                  launch.agent_store ? "agent" : "rank 0", launch.restart_count, met_s);
    return line;
}

}  // namespace trainbench
