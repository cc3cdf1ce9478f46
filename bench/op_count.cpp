// Operator calls per micro-batch: every ATen operator a training run makes (forward, backward,
// update), counted by name through a global RecordFunction callback, per micro-batch.
//
//   build/bin/bench_ops CONFIG MICRO_BATCH ACCUMULATION [STEPS]
//
// On a CPU a small micro-batch costs its operator calls (dispatch, autograd node, allocation)
// more than its arithmetic: this counts them. Prints the total per micro-batch and the
// most frequent operators as a Markdown table (docs/BENCHMARKS.md).
#include <ATen/record_function.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "trainbench/config_io.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

std::mutex counts_mutex;
std::map<std::string, int64_t> counts;

std::unique_ptr<at::ObserverContext> countCall(const at::RecordFunction& call) {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts[call.name()];
    return nullptr;
}

int64_t runAndCount(const RunConfig& config) {
    {
        std::lock_guard<std::mutex> lock(counts_mutex);
        counts.clear();
    }
    TrainingSession session(config);
    session.start();
    session.wait();
    std::lock_guard<std::mutex> lock(counts_mutex);
    int64_t total = 0;
    for (const auto& [name, n] : counts) total += n;
    return total;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s CONFIG MICRO_BATCH ACCUMULATION [STEPS]\n", argv[0]);
        return 2;
    }
    RunConfig config = loadRunConfigFile(argv[1]);
    config.train.micro_batch_size = std::stoll(argv[2]);
    config.train.gradient_accumulation_steps = std::stoll(argv[3]);
    config.train.global_batch_size.reset();
    config.train.eval_every = 0;
    config.train.checkpoint_every = 0;
    const int64_t steps = argc > 4 ? std::stoll(argv[4]) : 4;
    at::addGlobalCallback(at::RecordFunctionCallback(countCall).scopes(
        {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    // Two runs that differ by one step: their difference is one step's calls, without the
    // set-up's (initialisation, the first step's allocations of the optimizer state).
    config.train.steps = steps;
    const int64_t shorter = runAndCount(config);
    const std::map<std::string, int64_t> before = counts;
    config.train.steps = steps + 1;
    const int64_t longer = runAndCount(config);
    const int64_t K = config.train.gradient_accumulation_steps;
    std::vector<std::pair<int64_t, std::string>> per_step;
    for (const auto& [name, n] : counts) {
        auto found = before.find(name);
        const int64_t delta = n - (found == before.end() ? 0 : found->second);
        if (delta > 0) per_step.emplace_back(delta, name);
    }
    std::sort(per_step.rbegin(), per_step.rend());
    std::printf("operator calls per step %lld, per micro-batch %.0f (m %lld, K %lld)\n\n",
                (long long)(longer - shorter), double(longer - shorter) / double(K),
                (long long)config.train.micro_batch_size, (long long)K);
    std::printf("| operator | calls per step |\n|---|---:|\n");
    for (size_t i = 0; i < std::min<size_t>(per_step.size(), 30); ++i)
        std::printf("| `%s` | %lld |\n", per_step[i].second.c_str(), (long long)per_step[i].first);
    return 0;
}
