// The summary JSON line of `run` and `resume` (docs/design/run_contract.md section 5).
#include <cmath>

#include <nlohmann/json.hpp>

#include "trainbench/training_session.h"

namespace trainbench {

std::string runSummaryToJson(const RunSummary& s) {
    nlohmann::json j = {
        {"run_id", s.run_id},
        {"status", runStatusName(s.status)},
        {"steps", s.steps},
        {"tokens", s.tokens},
        {"final_loss", std::isfinite(s.final_loss) ? nlohmann::json(s.final_loss) : nlohmann::json(nullptr)},
        {"micro_batch_size", s.micro_batch_size},
        {"gradient_accumulation_steps", s.gradient_accumulation_steps},
        {"world_size", s.world_size},
        {"global_batch_size", s.global_batch_size},
        {"peak_memory_bytes", s.peak_memory_bytes},
        {"tokens_per_s", s.tokens_per_s},
        {"wall_time_s", s.wall_time_s},
    };
    if (s.host_peak_bytes > 0) j["host_peak_bytes"] = s.host_peak_bytes;
    if (!s.error.empty()) j["error"] = s.error;
    if (s.out_of_memory) j["out_of_memory"] = true;
    // The error may quote a file name that is not UTF-8: it prints as U+FFFD, never throws.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace trainbench
