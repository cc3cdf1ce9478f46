// Seed groups: runs whose configs differ only in their seeds, and the mean and min-max band of their curves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trainbench/metric_point.h"

namespace trainbench::gui {

// The config keys that only pick random numbers: runs that differ in nothing else are repeats
// of one experiment, and their spread is the noise a real difference has to beat.
inline constexpr const char* kSeedKeys[] = {"train.seed", "data.seed"};

// Indices into `config_jsons`, grouped: configs that are equal once the seed keys are removed
// share a group. Groups are ordered by their first index, members ascending; a run alike no
// other is a group of one, and so is a config that is not a JSON object.
std::vector<std::vector<size_t>> groupBySeed(const std::vector<std::string>& config_jsons);

// The name a group is shown under: its first run's name without the words that name a seed
// ("seed=3", as a grid over train.seed names its runs), so "tiny seed=1 lr=1e-2" stands
// for all of its seeds as "tiny lr=1e-2"; a name of only such words is kept as it is.
std::string seedGroupName(const std::string& first_run_name);

// Whether any group of `groups` has two runs or more.
bool hasSeedGroup(const std::vector<std::vector<size_t>>& groups);

// The runs of a group at one step.
struct SeedBandPoint {
    int64_t step = 0;
    // Means over the runs that have a point at this step: the group's x when the axis is tokens
    // or wall time (runs of a group agree on them only roughly).
    double tokens = 0;
    double wall_time = 0;
    // Over the finite values at this step; NaN where there is none, which plots as a gap.
    double mean = 0;
    double min = 0;
    double max = 0;
    int values = 0;  // how many finite values made them
};

// One point per step that any of `series` has, ascending by step, aligned on the step: a run
// that has not reached a step, or ended before it, is left out of that step. Within one series
// a repeated step counts once, with its last point.
std::vector<SeedBandPoint> seedBand(const std::vector<std::vector<MetricPoint>>& series);

}  // namespace trainbench::gui
