#include "generate/sampling.h"

#include <stdexcept>

namespace trainbench {

torch::Tensor samplingDistribution(const torch::Tensor& logits, const SamplingOptions& o) {
    auto z = logits.detach().to(torch::kCPU, torch::kFloat64).reshape({-1});
    const int64_t V = z.size(0);
    if (o.temperature <= 0) {
        auto out = torch::zeros({V}, torch::kFloat64);
        out[z.argmax().item<int64_t>()] = 1.0;
        return out;
    }
    auto probs = (z / o.temperature).softmax(0);
    // The tokens by probability, most likely first; a stable sort keeps ties in id order.
    auto sorted = probs.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true);
    auto values = std::get<0>(sorted), order = std::get<1>(sorted);
    int64_t keep = V;
    if (o.top_k > 0) keep = std::min(keep, o.top_k);
    if (o.top_p < 1.0) {
        // The fewest tokens whose probability reaches top_p (at least one).
        auto cumulative = values.cumsum(0);
        const int64_t reach = cumulative.lt(o.top_p).sum().item<int64_t>() + 1;
        keep = std::min(keep, std::max<int64_t>(reach, 1));
    }
    auto kept = torch::zeros({V}, torch::kFloat64);
    kept.index_put_({order.narrow(0, 0, keep)}, values.narrow(0, 0, keep));
    return kept / kept.sum();
}

int64_t drawToken(const torch::Tensor& logits, const SamplingOptions& o, at::Generator& generator) {
    if (o.temperature <= 0) return logits.detach().reshape({-1}).argmax().item<int64_t>();
    auto distribution = samplingDistribution(logits, o);
    return torch::multinomial(distribution, 1, /*replacement=*/false, generator).item<int64_t>();
}

}  // namespace trainbench
