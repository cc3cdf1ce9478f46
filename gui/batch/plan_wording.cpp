// The Batch & memory view's plan in words: the budget bar's share and the planner's "what fits".
#include "batch/plan_wording.h"

#include <QObject>

#include <cmath>

namespace trainbench::gui {

QString formatShareOfBudget(double share) {
    // Below 0.1 % the bar's own percentage would read "0 %", which is true but says nothing;
    // past twice the budget a percentage no longer reads as a size ("42476.0 %"): a multiple does.
    if (share < 0.001) return QObject::tr("peak: < 0.1 % of the budget");
    if (share < 2.0) return QObject::tr("peak: %1 % of the budget").arg(100.0 * share, 0, 'f', 1);
    return QObject::tr("peak: %1× the budget").arg(share, 0, 'f', share < 10.0 ? 1 : 0);
}

QString describeLayoutAdvice(const LayoutAdvice& advice, int64_t world_size) {
    if (advice.limit_bytes <= 0) return QObject::tr("What fits: no budget to plan against.");
    auto layout = [](const MemoryLayout& l) {
        const QString stage = l.expert_parallel > 1 ? QObject::tr("stage %1 with EP %2").arg(l.zero_stage).arg(l.expert_parallel)
                                                    : QObject::tr("stage %1").arg(l.zero_stage);
        return QObject::tr("%1, recompute %2, m %3").arg(stage).arg(QString::fromStdString(l.activation_checkpointing))
            .arg(l.micro_batch_size);
    };
    const QString ranks = world_size == 1 ? QObject::tr("1 rank") : QObject::tr("%1 ranks").arg(world_size);
    const QString here = advice.cheapest.micro_batch_size > 0
                             ? QObject::tr("Cheapest that fits on %1, %2 % to spare: %3.")
                                   .arg(ranks)
                                   .arg(std::lround(100 * kLayoutSafetyMargin))
                                   .arg(layout(advice.cheapest))
                             : QObject::tr("Nothing fits on %1, even at m 1.").arg(ranks);
    const QString fewest = advice.fewest_ranks > 0
                               ? QObject::tr("Fewest ranks at m 1: %1 (%2).").arg(advice.fewest_ranks).arg(layout(advice.fewest_ranks_layout))
                               : QObject::tr("No number of ranks up to 4096 fits m 1.");
    return here + QLatin1Char(' ') + fewest;
}

}  // namespace trainbench::gui
