// How the memory plan reads in words: the budget bar's share and the planner's "what fits".
#pragma once

#include <QString>

#include <cstdint>

#include "trainbench/memory_plan.h"

namespace trainbench::gui {

// The budget bar's text: a percentage up to twice the budget, a multiple beyond.
QString formatShareOfBudget(double share);
// The planner's "what fits" in a sentence: the cheapest layout on `world_size` ranks and the
// fewest ranks at m 1.
QString describeLayoutAdvice(const LayoutAdvice& advice, int64_t world_size);

}  // namespace trainbench::gui
