// Expanding a grid over up to two config fields into run configs, keeping the global batch.
#include "trainbench/config_grid.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "trainbench/config_io.h"
#include "trainbench/divisors.h"

namespace trainbench {

namespace {

constexpr const char* kMicroBatch = "train.micro_batch_size";
constexpr const char* kAccumulation = "train.gradient_accumulation_steps";
constexpr const char* kWorldSize = "runtime.world_size";
constexpr const char* kGlobalBatch = "train.global_batch_size";

// The batch factors by the letters of m x K x W = B; other fields by their key.
std::string shortName(const std::string& field) {
    if (field == kMicroBatch) return "m";
    if (field == kAccumulation) return "K";
    if (field == kWorldSize) return "W";
    if (field == kGlobalBatch) return "B";
    const auto dot = field.find('.');
    return dot == std::string::npos ? field : field.substr(dot + 1);
}

std::string divisorList(int64_t n) {
    std::ostringstream out;
    for (int64_t d : divisorsOf(n)) out << (d == 1 ? "" : ", ") << d;
    return out.str();
}

// The override's own message without the `--set` wording of the command line.
std::string withoutSetPrefix(std::string message) {
    for (const std::string prefix : {"--set: ", "--set "}) {
        if (message.rfind(prefix, 0) == 0) return message.substr(prefix.size());
    }
    return message;
}

void checkAxes(const std::vector<GridAxis>& axes) {
    if (axes.empty() || axes.size() > 2)
        throw ConfigError("grid", "a grid varies one or two fields, not " + std::to_string(axes.size()));
    if (axes.size() == 2 && axes[0].field == axes[1].field)
        throw ConfigError(axes[1].field, "the grid names " + axes[1].field + " twice; pick two different fields");
    int64_t points = 1;
    for (const GridAxis& axis : axes) {
        if (axis.values.empty())
            throw ConfigError(axis.field, "the grid gives no values for " + axis.field +
                                              "; list them separated by commas, e.g. 1e-3, 3e-4");
        std::set<std::string> seen;
        for (const std::string& value : axis.values) {
            if (!seen.insert(value).second)
                throw ConfigError(axis.field, "the grid lists " + axis.field + "=" + value + " twice; list each value once");
        }
        points *= static_cast<int64_t>(axis.values.size());
    }
    if (points > kMaxGridPoints)
        throw ConfigError(axes.back().field, "the grid makes " + std::to_string(points) + " runs, more than the " +
                                                 std::to_string(kMaxGridPoints) + " a queue takes; list fewer values");
}

bool gridSets(const std::vector<GridAxis>& axes, const char* field) {
    return std::any_of(axes.begin(), axes.end(), [&](const GridAxis& axis) { return axis.field == field; });
}

// Makes m x K x W equal `target` by changing the batch factor the grid left alone.
void keepGlobalBatch(RunConfig& config, GridPoint& point, const std::vector<GridAxis>& axes, int64_t target) {
    TrainConfig& train = config.train;
    const int64_t world = config.runtime.world_size;
    if (config.globalBatch() == target) return;
    const bool sets_m = gridSets(axes, kMicroBatch);
    const bool sets_k = gridSets(axes, kAccumulation);
    const std::string where = "grid point " + point.label() + ": ";
    if (sets_m && sets_k)
        throw ConfigError(kAccumulation, where + "m " + std::to_string(train.micro_batch_size) + " x K " +
                                             std::to_string(train.gradient_accumulation_steps) + " x W " +
                                             std::to_string(world) + " is not the global batch " +
                                             std::to_string(target) +
                                             " the grid keeps; vary only one of them, or let the global batch vary");
    if (world <= 0 || target % world != 0)
        throw ConfigError(kWorldSize, where + "the global batch " + std::to_string(target) +
                                          " is not a multiple of the world size " + std::to_string(world));
    const int64_t per_rank = target / world;
    // The grid set one factor of per_rank = m x K; the other becomes the quotient.
    auto quotient = [&](int64_t given, const char* path, const char* what) {
        if (given <= 0 || per_rank % given != 0)
            throw ConfigError(path, where + "the global batch " + std::to_string(target) + " (kept fixed) is not a " +
                                        "multiple of " + what + " x W; " + what + " values that divide it at W " +
                                        std::to_string(world) + ": " + divisorList(per_rank));
        return per_rank / given;
    };
    if (sets_k) {
        train.micro_batch_size = quotient(train.gradient_accumulation_steps, kAccumulation, "K");
        point.settings.push_back("m=" + std::to_string(train.micro_batch_size));
        return;
    }
    const char* changed = sets_m ? kMicroBatch : gridSets(axes, kWorldSize) ? kWorldSize : kGlobalBatch;
    train.gradient_accumulation_steps = quotient(train.micro_batch_size, changed, "m");
    point.settings.push_back("K=" + std::to_string(train.gradient_accumulation_steps));
}

}  // namespace

std::string GridPoint::label() const {
    std::string text;
    for (const std::string& setting : settings) text += (text.empty() ? "" : " ") + setting;
    return text;
}

std::vector<std::string> splitGridValues(const std::string& text) {
    std::vector<std::string> values;
    std::string piece;
    auto flush = [&] {
        if (!piece.empty()) values.push_back(piece);
        piece.clear();
    };
    for (char c : text) {
        if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == ';') flush();
        else piece += c;
    }
    flush();
    return values;
}

GridAxis parseGridAxis(const std::string& text) {
    const auto equals = text.find('=');
    std::string field = equals == std::string::npos ? std::string() : text.substr(0, equals);
    while (!field.empty() && field.back() == ' ') field.pop_back();
    while (!field.empty() && field.front() == ' ') field.erase(field.begin());
    if (field.empty())
        throw ConfigError("grid", "--grid '" + text + "': write it as section.key=value,value,..., e.g. --grid "
                                                      "train.lr=1e-3,3e-3");
    return {field, splitGridValues(text.substr(equals + 1))};
}

std::vector<GridPoint> expandConfigGrid(const RunConfig& base, const std::vector<GridAxis>& axes,
                                        bool keep_global_batch) {
    checkAxes(axes);
    const GridAxis& outer = axes[0];
    const GridAxis* inner = axes.size() > 1 ? &axes[1] : nullptr;
    const bool sets_global = gridSets(axes, kGlobalBatch);

    std::vector<GridPoint> points;
    for (const std::string& outer_value : outer.values) {
        const size_t inner_count = inner ? inner->values.size() : 1;
        for (size_t j = 0; j < inner_count; ++j) {
            GridPoint point;
            point.config = base;
            std::vector<std::pair<const GridAxis*, std::string>> assignments{{&outer, outer_value}};
            if (inner) assignments.emplace_back(inner, inner->values[j]);
            for (const auto& [axis, value] : assignments) {
                try {
                    applyConfigOverride(point.config, axis->field + "=" + value);
                } catch (const ConfigError& error) {
                    throw ConfigError(error.path().empty() ? axis->field : error.path(),
                                      "grid value " + axis->field + "=" + value + ": " + withoutSetPrefix(error.what()));
                }
                point.settings.push_back(shortName(axis->field) + "=" + value);
            }

            TrainConfig& train = point.config.train;
            if (sets_global) {
                keepGlobalBatch(point.config, point, axes, train.global_batch_size.value_or(0));
            } else if (keep_global_batch) {
                keepGlobalBatch(point.config, point, axes, base.globalBatch());
                if (train.global_batch_size) train.global_batch_size = point.config.globalBatch();
            } else if (train.global_batch_size) {
                // The global batch is free to vary: a fixed one in the base config would refuse
                // every point that changes a batch factor.
                train.global_batch_size = point.config.globalBatch();
            }

            const std::vector<ConfigIssue> issues = validateRunConfig(point.config);
            if (!issues.empty())
                throw ConfigError(issues.front().path, "grid point " + point.label() + ": " + issues.front().message);
            points.push_back(std::move(point));
        }
    }
    return points;
}

}  // namespace trainbench
