// A run's points, events and config as TensorBoard summaries.
#include "tensorboard/run_summaries.h"

#include <ctime>

#include <nlohmann/json.hpp>

#include "trainbench/run_sample.h"

namespace trainbench::tensorboard {

double runStartUnixTime(const std::string& created_utc) {
    std::tm parts{};
    const char* end = strptime(created_utc.c_str(), "%Y-%m-%dT%H:%M:%SZ", &parts);
    if (!end || *end != '\0') return 0;
    return static_cast<double>(timegm(&parts));
}

void writePoint(EventFileWriter& file, const MetricPoint& point, double run_start) {
    file.addScalar(point.key, point.step, run_start + point.wall_time, static_cast<float>(point.value));
}

void writeEvent(EventFileWriter& file, const RunEvent& event, double run_start) {
    // A sample's message is JSON; TensorBoard shows the text the model wrote, as written.
    if (const auto sample = sampleOfEvent(event)) {
        file.addText("samples", event.step, run_start + event.wall_time,
                     "```\n" + sample->prompt + sample->completion + "\n```");
        return;
    }
    file.addText("events/" + event.kind, event.step, run_start + event.wall_time, event.message);
}

void writeConfig(EventFileWriter& file, const std::string& config_json, double run_start) {
    const auto parsed = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
    const std::string shown =
        parsed.is_discarded() ? config_json : parsed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    file.addText("config", 0, run_start, "```json\n" + shown + "\n```");
}

}  // namespace trainbench::tensorboard
