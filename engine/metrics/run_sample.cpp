#include "trainbench/run_sample.h"

#include <nlohmann/json.hpp>

#include "trainbench/event_kind.h"

namespace trainbench {

std::string sampleEventMessage(const RunSample& sample) {
    return nlohmann::json{{"prompt", sample.prompt}, {"completion", sample.completion}, {"ended", sample.ended}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<RunSample> sampleOfEvent(const RunEvent& event) {
    if (eventKindNamed(event.kind) != EventKind::Sample) return std::nullopt;
    const auto j = nlohmann::json::parse(event.message, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("prompt") || !j["prompt"].is_string() || !j.contains("completion") ||
        !j["completion"].is_string())
        return std::nullopt;
    RunSample sample;
    sample.step = event.step;
    sample.prompt = j["prompt"].get<std::string>();
    sample.completion = j["completion"].get<std::string>();
    sample.ended = j.value("ended", false);
    return sample;
}

}  // namespace trainbench
