// The four precisions side by side: what fp8 (DeepSeek-V3's recipe) and bf16 AdamW moments buy
// in micro-batch at the config's layout (`plan`'s "precisions", the GUI's batch panel).
#include <nlohmann/json.hpp>

#include "trainbench/memory_plan.h"
#include "trainbench/target_machine.h"

namespace trainbench {
namespace {

// In the order of what they save: fp32; bf16 (planned as fp32, activation_bytes.cpp says why);
// fp8's activations; fp8 with the moments in bf16 too, DeepSeek-V3's whole recipe.
struct Precision {
    const char* dtype;
    const char* optimizer_dtype;
};
constexpr Precision kPrecisions[] = {{"fp32", "fp32"}, {"bf16", "fp32"}, {"fp8", "fp32"}, {"fp8", "bf16"}};

template <class Plan> std::vector<PrecisionFit> planEach(const RunConfig& config, Plan plan) {
    std::vector<PrecisionFit> fits;
    for (const Precision& p : kPrecisions) {
        RunConfig c = config;
        c.runtime.dtype = p.dtype;
        c.runtime.optimizer_dtype = p.optimizer_dtype;
        PrecisionFit fit{p.dtype, p.optimizer_dtype, plan(c), 0};
        fit.largest_micro_batch = fit.plan.largest_fitting_micro_batch;
        fits.push_back(fit);
    }
    return fits;
}

}  // namespace

std::vector<PrecisionFit> planPrecisions(const RunConfig& config, int64_t limit_bytes) {
    return planEach(config, [&](const RunConfig& c) { return planMemory(c, limit_bytes); });
}

std::vector<PrecisionFit> planPrecisionsOnTarget(const RunConfig& config, const TargetMachine& target) {
    return planEach(config, [&](const RunConfig& c) { return planOnTarget(c, target); });
}

std::string precisionFitsToJson(const std::vector<PrecisionFit>& fits) {
    nlohmann::json out = nlohmann::json::array();
    for (const PrecisionFit& f : fits)
        out.push_back({{"dtype", f.dtype},
                       {"optimizer_dtype", f.optimizer_dtype},
                       {"largest_micro_batch", f.largest_micro_batch},
                       {"micro_batch_size", f.plan.micro_batch_size},
                       {"peak_bytes", f.plan.peak_bytes},
                       {"activation_bytes", f.plan.activation_bytes},
                       {"optimizer_bytes", f.plan.optimizer_bytes},
                       {"limit_bytes", f.plan.limit_bytes},
                       {"fits", f.plan.fits},
                       {"plan", nlohmann::json::parse(memoryPlanToJson(f.plan))}});
    return out.dump();
}

}  // namespace trainbench
