// Live advice: detectors that watch a run's series and suggest a change, never making one.
// Each returns a message when it fires and stays quiet for a while after, so a run's event
// log reads like a colleague's remarks, not an alarm.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace trainbench {

// A step loss far above its recent past: the z-score against the last `window` steps (the
// outlier test llm.c prints), once the window holds `min_samples`.
class LossSpikeDetector {
public:
    explicit LossSpikeDetector(int window = 64, double threshold = 5.0, int min_samples = 16);
    std::optional<std::string> observe(int64_t step, double loss);
    double lastZScore() const { return last_z_; }

private:
    int window_, min_samples_;
    double threshold_;
    std::deque<double> recent_;
    int64_t quiet_until_ = -1;
    double last_z_ = 0;
};

// Routed-expert loads summed over `window` steps: max over mean above `threshold` in a layer.
class ExpertImbalanceDetector {
public:
    explicit ExpertImbalanceDetector(int window = 50, double threshold = 3.0);
    // `loads`: tokens per expert of one MoE layer for one step.
    std::optional<std::string> observe(int64_t step, int64_t layer, const std::vector<double>& loads);

private:
    struct Layer {
        int64_t layer = 0;
        std::vector<double> sums;
        int steps = 0;
    };
    int window_;
    double threshold_;
    std::vector<Layer> layers_;
};

// Expert parallelism: the routed rows each rank's experts received, summed over `window` steps;
// the busiest rank above `threshold` x the mean names itself and its experts (the others wait
// for it in every exchange).
class RankImbalanceAdvisor {
public:
    explicit RankImbalanceAdvisor(int window = 20, double threshold = 1.25);
    // `received`: per rank, this step; `expert_parallel` and `experts` name each rank's experts.
    std::optional<std::string> observe(int64_t step, const std::vector<int64_t>& received, int64_t expert_parallel,
                                       int64_t experts);

private:
    int window_;
    double threshold_;
    std::vector<double> sums_;
    int steps_ = 0;
};

// Throughput against the best split the explorer measured for this config.
struct ExploredBest {
    int64_t micro_batch_size = 0;
    int64_t gradient_accumulation_steps = 0;
    double tokens_per_s = 0;
};

class ThroughputWatch {
public:
    // Fires when the mean rate over `window` steps stays below `fraction` of the best.
    ThroughputWatch(ExploredBest best, int64_t micro_batch_size, int window = 20, double fraction = 0.7);
    std::optional<std::string> observe(int64_t step, double tokens_per_s);

private:
    ExploredBest best_;
    int64_t micro_batch_size_;
    int window_;
    double fraction_;
    std::deque<double> recent_;
    bool fired_ = false;
};

// What the critical batch (sequences) says of K at the global batch B: the K that reaches it
// (an integer multiple of K, at least twice it) when it is `factor` x B or more; -1 when B is
// 2 x `factor` times it or more (tokens wasted); 0 in between.
int64_t criticalBatchAccumulation(double critical_sequences, int64_t global_batch, int64_t accumulation,
                                  double factor = 2.0);

// One sentence on the critical batch (in sequences, with its relative error) against the global
// batch B = K x per_step: far above B (by `factor`), the K that reaches it (an integer multiple
// of K, the same memory); far below, that tokens are wasted; empty in between.
std::string criticalBatchAdvice(double critical_sequences, double relative_error, int64_t global_batch,
                                int64_t accumulation, int64_t per_step, double factor = 2.0);

// The critical batch (the smoothed noise scale, in sequences) against the global batch B, once
// the estimate has earned it: far above B, raising K (same memory) would use each step's compute
// better; far below, the batch wastes tokens. It waits for its evidence: not before step
// `after_step` (the learning-rate warm-up, when the estimate moves most), and only once the same
// verdict has held for `steady_steps` observations in a row with every estimate within its own
// error band (the relative error, at least 25 %) of where the stretch began; each observation
// with a relative error of `max_error` or more, another verdict, or an estimate outside the band
// starts the stretch again. The advice says how long it waited. After it fires it stays quiet for
// `quiet_steps`.
class CriticalBatchAdvisor {
public:
    explicit CriticalBatchAdvisor(double factor = 2.0, double max_error = 0.3, int64_t quiet_steps = 1000,
                                  int64_t steady_steps = 10, int64_t after_step = 0);
    // `accumulation`: K now; `per_step`: m x W, the sequences one accumulation step adds.
    std::optional<std::string> observe(int64_t step, double critical_sequences, double relative_error,
                                       int64_t global_batch, int64_t accumulation, int64_t per_step);

private:
    double factor_, max_error_;
    int64_t quiet_steps_, steady_steps_, after_step_;
    int64_t quiet_until_ = -1;
    // The stretch of one verdict so far: its first step and estimate, and its length.
    int64_t verdict_ = 0, since_step_ = -1, held_ = 0;
    double since_estimate_ = 0;
};

}  // namespace trainbench

// Floor: analysis/ (engine/README.md)
