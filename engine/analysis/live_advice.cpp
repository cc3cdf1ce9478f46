// Live advice detectors: plain arithmetic on recent values.
#include "trainbench/live_advice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

namespace trainbench {

LossSpikeDetector::LossSpikeDetector(int window, double threshold, int min_samples)
    : window_(window), min_samples_(min_samples), threshold_(threshold) {}

std::optional<std::string> LossSpikeDetector::observe(int64_t step, double loss) {
    if (!std::isfinite(loss)) return std::nullopt;  // non-finite steps have their own event
    std::optional<std::string> message;
    last_z_ = 0;
    if (static_cast<int>(recent_.size()) >= min_samples_) {
        const double n = double(recent_.size());
        const double mean = std::accumulate(recent_.begin(), recent_.end(), 0.0) / n;
        double squares = 0;
        for (double v : recent_) squares += (v - mean) * (v - mean);
        const double sd = std::sqrt(squares / n);
        if (sd > 0) last_z_ = (loss - mean) / sd;
        if (last_z_ > threshold_ && step > quiet_until_) {
            std::ostringstream text;
            text.precision(3);
            text << "loss spike at step " << step << ": " << loss << " is " << last_z_ << " standard deviations above "
                 << "the mean of the last " << recent_.size()
                 << " steps; if spikes recur, raise train.gradient_accumulation_steps (a larger global batch "
                    "averages more noise) or lower train.lr";
            message = text.str();
            quiet_until_ = step + window_;
        }
    }
    recent_.push_back(loss);
    if (static_cast<int>(recent_.size()) > window_) recent_.pop_front();
    return message;
}

ExpertImbalanceDetector::ExpertImbalanceDetector(int window, double threshold)
    : window_(window), threshold_(threshold) {}

std::optional<std::string> ExpertImbalanceDetector::observe(int64_t step, int64_t layer,
                                                            const std::vector<double>& loads) {
    auto it = std::find_if(layers_.begin(), layers_.end(), [&](const Layer& l) { return l.layer == layer; });
    if (it == layers_.end()) {
        layers_.push_back(Layer{layer, std::vector<double>(loads.size(), 0.0), 0});
        it = layers_.end() - 1;
    }
    if (it->sums.size() != loads.size()) it->sums.assign(loads.size(), 0.0);
    for (size_t e = 0; e < loads.size(); ++e) it->sums[e] += loads[e];
    if (++it->steps < window_) return std::nullopt;
    const double mean = std::accumulate(it->sums.begin(), it->sums.end(), 0.0) / double(it->sums.size());
    const auto busiest = std::max_element(it->sums.begin(), it->sums.end());
    const double ratio = mean > 0 ? *busiest / mean : 0.0;
    const int64_t expert = busiest - it->sums.begin();
    const int steps = it->steps;
    std::fill(it->sums.begin(), it->sums.end(), 0.0);
    it->steps = 0;
    if (ratio <= threshold_) return std::nullopt;
    std::ostringstream text;
    text.precision(3);
    text << "expert imbalance in layer " << layer << " over steps " << step - steps + 1 << "-" << step << ": expert "
         << expert << " took " << ratio << "x the mean load; raise model.bias_update_speed (aux-loss-free "
         << "balancing) or model.seq_aux_loss_alpha, or lower model.route_scale";
    return text.str();
}

RankImbalanceAdvisor::RankImbalanceAdvisor(int window, double threshold) : window_(window), threshold_(threshold) {}

std::optional<std::string> RankImbalanceAdvisor::observe(int64_t step, const std::vector<int64_t>& received,
                                                         int64_t expert_parallel, int64_t experts) {
    if (received.empty() || expert_parallel < 1) return std::nullopt;
    if (sums_.size() != received.size()) sums_.assign(received.size(), 0.0), steps_ = 0;
    for (size_t r = 0; r < received.size(); ++r) sums_[r] += double(received[r]);
    if (++steps_ < window_) return std::nullopt;
    const double mean = std::accumulate(sums_.begin(), sums_.end(), 0.0) / double(sums_.size());
    const auto busiest = std::max_element(sums_.begin(), sums_.end());
    const double ratio = mean > 0 ? *busiest / mean : 0.0;
    const int64_t rank = busiest - sums_.begin(), per_rank = experts / expert_parallel;
    const int steps = steps_;
    std::fill(sums_.begin(), sums_.end(), 0.0);
    steps_ = 0;
    if (ratio <= threshold_) return std::nullopt;
    const int64_t first = (rank % expert_parallel) * per_rank;
    std::ostringstream text;
    text.precision(3);
    text << "expert-parallel imbalance over steps " << step - steps + 1 << "-" << step << ": rank " << rank
         << " (experts " << first << "-" << first + per_rank - 1 << " of every MoE layer) received " << ratio
         << "x the mean routed tokens, and the other ranks wait for it in every exchange; raise "
         << "model.bias_update_speed (aux-loss-free balancing) or model.seq_aux_loss_alpha";
    return text.str();
}

ThroughputWatch::ThroughputWatch(ExploredBest best, int64_t micro_batch_size, int window, double fraction)
    : best_(best), micro_batch_size_(micro_batch_size), window_(window), fraction_(fraction) {}

std::optional<std::string> ThroughputWatch::observe(int64_t step, double tokens_per_s) {
    if (fired_ || best_.tokens_per_s <= 0 || !std::isfinite(tokens_per_s)) return std::nullopt;
    recent_.push_back(tokens_per_s);
    if (static_cast<int>(recent_.size()) > window_) recent_.pop_front();
    if (static_cast<int>(recent_.size()) < window_) return std::nullopt;
    const double mean = std::accumulate(recent_.begin(), recent_.end(), 0.0) / double(recent_.size());
    if (mean >= fraction_ * best_.tokens_per_s) return std::nullopt;
    fired_ = true;
    std::ostringstream text;
    text.precision(0);
    text << std::fixed << "throughput " << mean << " tokens/s over steps " << step - window_ + 1 << "-" << step
         << " is below " << int(fraction_ * 100) << "% of the explorer's best, " << best_.tokens_per_s
         << " tokens/s at micro_batch_size " << best_.micro_batch_size << " x gradient_accumulation_steps "
         << best_.gradient_accumulation_steps;
    if (best_.micro_batch_size != micro_batch_size_)
        text << "; that split keeps the global batch: --set train.micro_batch_size=" << best_.micro_batch_size
             << " --set train.gradient_accumulation_steps=" << best_.gradient_accumulation_steps;
    else
        text << " (the same split: the machine is busier than when it was measured)";
    return text.str();
}

CriticalBatchAdvisor::CriticalBatchAdvisor(double factor, double max_error, int64_t quiet_steps, int64_t steady_steps,
                                           int64_t after_step)
    : factor_(factor),
      max_error_(max_error),
      quiet_steps_(quiet_steps),
      steady_steps_(std::max<int64_t>(1, steady_steps)),
      after_step_(after_step) {}

int64_t criticalBatchAccumulation(double critical, int64_t global_batch, int64_t accumulation, double factor) {
    if (critical <= 0 || global_batch <= 0) return 0;
    const double ratio = critical / double(global_batch);
    if (ratio >= factor) return accumulation * std::max<int64_t>(2, static_cast<int64_t>(std::floor(ratio)));
    if (ratio <= 1.0 / (2 * factor)) return -1;
    return 0;
}

std::string criticalBatchAdvice(double critical, double error, int64_t global_batch, int64_t accumulation,
                                int64_t per_step, double factor) {
    if (per_step <= 0) return {};
    const int64_t k = criticalBatchAccumulation(critical, global_batch, accumulation, factor);
    const double ratio = critical / double(std::max<int64_t>(global_batch, 1));
    char text[400];
    if (k > 0) {
        std::snprintf(text, sizeof text,
                      "the critical batch is ~%.1fx the global batch (%.0f against %lld sequences, +/- %.0f %%): "
                      "raise train.gradient_accumulation_steps from %lld to %lld (B %lld, the same memory) to "
                      "use each step's compute better; treat the estimate as a trend, not an optimum",
                      ratio, critical, (long long)global_batch, 100 * error, (long long)accumulation, (long long)k,
                      (long long)(k * per_step));
        return text;
    }
    if (k < 0) {
        std::snprintf(text, sizeof text,
                      "the global batch is ~%.0fx the critical batch (%lld against %.0f sequences, +/- %.0f %%): "
                      "tokens are being wasted; fewer accumulation steps would reach the same loss with fewer tokens",
                      1.0 / ratio, (long long)global_batch, critical, 100 * error);
        return text;
    }
    return {};
}

std::optional<std::string> CriticalBatchAdvisor::observe(int64_t step, double critical, double error,
                                                         int64_t global_batch, int64_t accumulation, int64_t per_step) {
    if (step < quiet_until_ || step <= after_step_) return std::nullopt;
    const int64_t k = criticalBatchAccumulation(critical, global_batch, accumulation, factor_);
    const int64_t verdict = k > 0 ? 1 : k < 0 ? -1 : 0;
    const double band = std::max(error, 0.25);
    const bool continues = verdict != 0 && error < max_error_ && verdict == verdict_ && held_ > 0 &&
                           std::fabs(critical - since_estimate_) <= band * since_estimate_;
    if (!continues) {
        // A new stretch starts here (or none, without a verdict or with too uncertain an estimate).
        verdict_ = error < max_error_ ? verdict : 0;
        held_ = verdict_ != 0 ? 1 : 0;
        since_step_ = step;
        since_estimate_ = critical;
    } else {
        ++held_;
    }
    if (verdict_ == 0 || held_ < steady_steps_) return std::nullopt;
    std::string advice = criticalBatchAdvice(critical, error, global_batch, accumulation, per_step, factor_);
    if (advice.empty()) return std::nullopt;
    char waited[200];
    std::snprintf(waited, sizeof waited, " (said once the estimate had held for %lld steps, since step %lld at %.0f sequences%s)",
                  (long long)held_, (long long)since_step_, since_estimate_,
                  after_step_ > 0 ? ", after the learning-rate warm-up" : "");
    advice += waited;
    quiet_until_ = step + quiet_steps_;
    held_ = 0;
    verdict_ = 0;
    return advice;
}

}  // namespace trainbench
