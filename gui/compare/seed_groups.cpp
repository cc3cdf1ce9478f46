// Seed groups: runs whose configs differ only in their seeds, and the mean and min-max band of their curves.
#include "compare/seed_groups.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <QString>

#include "compare/config_diff.h"

namespace trainbench::gui {

std::vector<std::vector<size_t>> groupBySeed(const std::vector<std::string>& config_jsons) {
    std::vector<std::map<QString, QString>> configs;
    configs.reserve(config_jsons.size());
    for (const std::string& json : config_jsons) {
        std::map<QString, QString> flat = flattenConfigJson(json);
        for (const char* key : kSeedKeys) flat.erase(QString::fromLatin1(key));
        configs.push_back(std::move(flat));
    }
    std::vector<std::vector<size_t>> groups;
    for (size_t i = 0; i < configs.size(); ++i) {
        auto same = std::find_if(groups.begin(), groups.end(), [&](const std::vector<size_t>& group) {
            // An empty map is an unreadable config: equal to another one says nothing.
            return !configs[i].empty() && configs[group.front()] == configs[i];
        });
        if (same == groups.end()) groups.push_back({i});
        else same->push_back(i);
    }
    return groups;
}

bool hasSeedGroup(const std::vector<std::vector<size_t>>& groups) {
    return std::any_of(groups.begin(), groups.end(), [](const std::vector<size_t>& group) { return group.size() > 1; });
}

std::vector<SeedBandPoint> seedBand(const std::vector<std::vector<MetricPoint>>& series) {
    struct Sums {
        int runs = 0;
        double tokens = 0;
        double wall_time = 0;
        double sum = 0;
        double min = std::numeric_limits<double>::infinity();
        double max = -std::numeric_limits<double>::infinity();
        int values = 0;
    };
    std::map<int64_t, Sums> by_step;
    for (const std::vector<MetricPoint>& points : series) {
        std::map<int64_t, const MetricPoint*> last_at_step;
        for (const MetricPoint& point : points) last_at_step[point.step] = &point;
        for (const auto& [step, point] : last_at_step) {
            Sums& sums = by_step[step];
            ++sums.runs;
            sums.tokens += static_cast<double>(point->tokens);
            sums.wall_time += point->wall_time;
            if (!std::isfinite(point->value)) continue;
            ++sums.values;
            sums.sum += point->value;
            sums.min = std::min(sums.min, point->value);
            sums.max = std::max(sums.max, point->value);
        }
    }
    std::vector<SeedBandPoint> band;
    band.reserve(by_step.size());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const auto& [step, sums] : by_step) {
        SeedBandPoint point;
        point.step = step;
        point.tokens = sums.tokens / sums.runs;
        point.wall_time = sums.wall_time / sums.runs;
        point.values = sums.values;
        point.mean = sums.values > 0 ? sums.sum / sums.values : nan;
        point.min = sums.values > 0 ? sums.min : nan;
        point.max = sums.values > 0 ? sums.max : nan;
        band.push_back(point);
    }
    return band;
}

std::string seedGroupName(const std::string& first_run_name) {
    std::string kept;
    size_t begin = 0;
    while (begin < first_run_name.size()) {
        size_t end = first_run_name.find(' ', begin);
        if (end == std::string::npos) end = first_run_name.size();
        const std::string word = first_run_name.substr(begin, end - begin);
        if (!word.empty() && word.rfind("seed=", 0) != 0) kept += (kept.empty() ? "" : " ") + word;
        begin = end + 1;
    }
    return kept.empty() ? first_run_name : kept;
}

}  // namespace trainbench::gui
