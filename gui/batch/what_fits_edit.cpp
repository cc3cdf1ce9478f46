// WhatFitsEdit: what "Apply what fits" does to a config: the target's cheapest layout and m (adviseOnTarget) set through withLayout, as one edit.
#include "batch/what_fits_edit.h"

#include <QObject>
#include <QStringList>

#include "batch/plan_wording.h"
#include "trainbench/config_io.h"

namespace trainbench::gui {

WhatFitsEdit whatFitsEdit(const RunConfig& config, const TargetAdvice& advice, const TargetMachine& target) {
    WhatFitsEdit edit;
    edit.config = config;
    const MemoryLayout& cheapest = advice.layout.cheapest;
    if (cheapest.micro_batch_size <= 0) {
        edit.note = QObject::tr("Nothing fits the target: nothing to apply.");
        return edit;
    }
    edit.config = withLayout(config, cheapest);
    const int64_t ep = edit.config.runtime.expert_parallel;
    if (ep > 1 && edit.config.runtime.world_size % ep != 0) {
        RunConfig ranked = config;
        ranked.runtime.world_size = target.devices;
        edit.config = withLayout(ranked, cheapest);
        edit.ranks_from_target = true;
    }
    edit.description = QObject::tr("Apply what fits: %1").arg(describeMemoryLayout(cheapest));
    if (edit.ranks_from_target)
        edit.description += QObject::tr(", %1 ranks").arg(edit.config.runtime.world_size);
    // Compared as the file would be written: every field, none forgotten.
    if (runConfigToJson(edit.config, -1) == runConfigToJson(config, -1)) {
        edit.note = QObject::tr("The config has this layout already.");
        return edit;
    }
    edit.applies = true;
    QStringList notes;
    if (edit.ranks_from_target)
        notes << QObject::tr("EP %1 needs ranks it divides: runtime.world_size becomes %2, the target's devices.")
                     .arg(ep)
                     .arg(edit.config.runtime.world_size);
    if (edit.config.runtime.offload_dir == kPlannedOffloadDir)
        notes << QObject::tr("The state goes to files: choose the directory on the Offload row (runtime.offload_dir "
                             "reads %1 until then, and Start refuses it).")
                     .arg(QString::fromLatin1(kPlannedOffloadDir));
    edit.note = notes.join(QLatin1Char(' '));
    return edit;
}

}  // namespace trainbench::gui
