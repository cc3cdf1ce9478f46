#include "train/window_noise.h"

#include <cmath>

namespace trainbench {

void WindowNoise::add(WindowStatistics& stats, FreshGradientNorms& fresh, Collectives* expert_group,
                      int64_t expert_parallel, int64_t K) {
    // The micro-batches' fresh gradient sums: per noise group, then the micro-batches counted.
    fresh_ = stats.add(fresh.windowSums());
    routed_ = {};
    if (!fresh.hasRouted()) return;
    // The routed experts' small batches: micro-batch k of every rank of the expert group, of
    // their summed token counts (the estimator over those unions). One small all-reduce in the
    // group; every rank of it then holds the group's sums, so each adds 1/EP of them to the
    // window's statistics.
    std::vector<torch::Tensor> list{fresh.routedWindow()};
    expert_group->allReduce(list, ReduceOp::Sum);
    auto squared = list[0].narrow(0, 0, K), counts = list[0].narrow(0, K, K);
    const double share = 1.0 / double(expert_parallel);
    routed_ = stats.add(torch::stack({(squared / counts.clamp_min(1.0)).sum(), counts.gt(0).sum().to(torch::kFloat64)}) *
                        share);
}

void WindowNoise::read(const WindowStatistics& stats, const std::vector<double>& group_squares, double routed_sq,
                       WindowResult& out) const {
    const int64_t groups = static_cast<int64_t>(group_squares.size());
    double window_sq = 0;
    for (double v : group_squares) window_sq += v;
    NoiseScaleSums total;
    total.tokens = double(out.tokens);
    total.micro_batches = static_cast<int64_t>(stats.value(fresh_, groups));
    // Under expert parallelism the routed experts are an estimator of their own (their own
    // small batches); |G|^2 and tr(Sigma) add over parameters, so their parts are added to the
    // experts group's and the total's.
    const bool routed = routed_.valid();
    const int64_t experts_group = 2;
    total.window_sq = window_sq - routed_sq;
    out.noise_groups.clear();
    for (int64_t g = 0; g < groups; ++g) {
        NoiseScaleSums part = total;
        part.fresh_sq_per_token = stats.value(fresh_, g);
        part.window_sq = group_squares[g] - (routed && g == experts_group ? routed_sq : 0.0);
        total.fresh_sq_per_token += part.fresh_sq_per_token;
        out.noise_groups.push_back(noiseScaleParts(part));
    }
    out.noise = noiseScaleParts(total);
    if (!routed) return;
    NoiseScaleSums unions;
    unions.tokens = total.tokens;
    unions.fresh_sq_per_token = stats.value(routed_, 0);
    unions.micro_batches = std::llround(stats.value(routed_, 1));
    unions.window_sq = routed_sq;
    const auto parts = noiseScaleParts(unions);
    auto add = [&](std::optional<NoiseScaleParts>& into) {
        if (!into || !parts) into.reset();  // one part without its small batches: no estimate
        else into = NoiseScaleParts{into->grad_sq + parts->grad_sq, into->trace + parts->trace};
    };
    add(out.noise);
    add(out.noise_groups[experts_group]);
}

}  // namespace trainbench
