// Operator calls per micro-batch: every ATen operator a training run makes (forward, backward,
// update), counted by name through a global RecordFunction callback, per micro-batch.
//
//   build/bin/bench_ops CONFIG MICRO_BATCH ACCUMULATION [STEPS]
//
// On a CPU a small micro-batch costs its operator calls (dispatch, autograd node, allocation)
// more than its arithmetic: this counts them. Prints the total per micro-batch and the
// most frequent operators as a Markdown table (docs/BENCHMARKS.md), then the outermost calls
// (those the model and the trainer make, and autograd's backward nodes) with the dispatches
// each makes in all and the time inside them per step (the counting's own cost included: for
// ranking, not for rates).
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
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
// Calls made from outside any other operator, and with every call nested inside them: what one
// call from the model costs in dispatches.
std::map<std::string, int64_t> outer_counts, nested_counts;
std::map<std::string, double> outer_seconds;  // with the counting's own cost in it
thread_local int depth = 0;
thread_local std::string outer_name;
thread_local std::chrono::steady_clock::time_point outer_start;

std::unique_ptr<at::ObserverContext> countCall(const at::RecordFunction& call) {
    std::lock_guard<std::mutex> lock(counts_mutex);
    ++counts[call.name()];
    if (depth++ == 0) {
        outer_name = call.name();
        ++outer_counts[outer_name];
        outer_start = std::chrono::steady_clock::now();
    }
    ++nested_counts[outer_name];
    return nullptr;
}

void leaveCall(const at::RecordFunction&, at::ObserverContext*) {
    if (--depth == 0) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - outer_start).count();
        std::lock_guard<std::mutex> lock(counts_mutex);
        outer_seconds[outer_name] += seconds;
    }
}

int64_t runAndCount(const RunConfig& config) {
    {
        std::lock_guard<std::mutex> lock(counts_mutex);
        counts.clear();
        outer_counts.clear();
        nested_counts.clear();
        outer_seconds.clear();
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
    at::addGlobalCallback(at::RecordFunctionCallback(countCall, leaveCall).scopes(
        {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    // Two runs that differ by one step: their difference is one step's calls, without the
    // set-up's (initialisation, the first step's allocations of the optimizer state).
    config.train.steps = steps;
    const int64_t shorter = runAndCount(config);
    const std::map<std::string, int64_t> before = counts, outer_before = outer_counts,
                                         nested_before = nested_counts;
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
    // The outermost calls, by the dispatches they make in all (themselves and all they call).
    std::vector<std::tuple<int64_t, int64_t, std::string, double>> outer;
    int64_t outer_total = 0;
    for (const auto& [name, n] : outer_counts) {
        auto found = outer_before.find(name);
        const int64_t calls = n - (found == outer_before.end() ? 0 : found->second);
        auto nested_found = nested_before.find(name);
        const int64_t nested = nested_counts[name] - (nested_found == nested_before.end() ? 0 : nested_found->second);
        outer_total += calls;
        // Time is the longer run's mean per step (a difference of two runs' times is mostly noise).
        const double seconds = outer_seconds[name] / double(steps + 1);
        if (nested > 0) outer.emplace_back(nested, calls, name, seconds);
    }
    std::sort(outer.rbegin(), outer.rend());
    std::printf("\noutermost calls per step %lld, per micro-batch %.0f\n\n", (long long)outer_total,
                double(outer_total) / double(K));
    std::printf("| outermost operator | calls per step | dispatches in all | ms per step (counting included) |\n"
                "|---|---:|---:|---:|\n");
    for (size_t i = 0; i < std::min<size_t>(outer.size(), 40); ++i)
        std::printf("| `%s` | %lld | %lld | %.3f |\n", std::get<2>(outer[i]).c_str(), (long long)std::get<1>(outer[i]),
                    (long long)std::get<0>(outer[i]), 1e3 * std::get<3>(outer[i]));
    return 0;
}
