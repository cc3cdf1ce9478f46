// ConfigSummary: the key numbers of a run config as the text the workbench shows.
#include "app/config_summary.h"

#include "trainbench/batch_schedule.h"

#include <cmath>
#include <cstdlib>

#include "common/display_format.h"
#include "trainbench/batch_schedule.h"
#include "trainbench/compute_dtype.h"
#include "trainbench/param_count.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

namespace {

QString formatRate(double value) {
    // 'g' keeps both 3e-4 and 0.003 short; learning rates never need more than 3 digits here.
    return QString::number(value, 'g', 3);
}

}  // namespace

ConfigSummary summarizeConfig(const RunConfig& config) {
    ConfigSummary out;
    const ModelConfig& model = config.model;
    const TrainConfig& train = config.train;

    const ParamCount params = countParameters(model);
    out.total_params = formatCount(params.total);
    const double share = params.total > 0 ? 100.0 * static_cast<double>(params.activated) /
                                                static_cast<double>(params.total)
                                          : 0.0;
    out.activated_params =
        QStringLiteral("%1 (%2 %)").arg(formatCount(params.activated)).arg(std::lround(share));

    out.model_shape = QStringLiteral("%1 layers · dim %2 · %3 experts, %4 active")
                          .arg(model.n_layers)
                          .arg(model.dim)
                          .arg(model.n_routed_experts)
                          .arg(model.n_activated_experts);
    out.batch_equation = formatBatchEquation(train.micro_batch_size,
                                             train.gradient_accumulation_steps,
                                             config.runtime.world_size);
    out.tokens_per_step = QStringLiteral("%1 (B %2 × %3)")
                              .arg(formatGrouped(config.tokensPerStep()))
                              .arg(config.globalBatch())
                              .arg(train.seq_len);
    out.seq_len = formatGrouped(train.seq_len);
    const BatchSchedule schedule(config);
    out.steps = schedule.adapts() ? QStringLiteral("≤ %1 (%2 tokens; the batch grows with the critical batch)")
                                        .arg(formatGrouped(schedule.plannedSteps()), formatGrouped(schedule.plannedTokens()))
                                  : formatGrouped(schedule.plannedSteps());
    out.learning_rate = isChoice(train.schedule, LrSchedule::Constant)
                            ? formatRate(train.lr)
                            : QStringLiteral("%1 → %2").arg(formatRate(train.lr), formatRate(train.min_lr));
    out.schedule = QStringLiteral("%1, %2 warmup %3")
                       .arg(QString::fromStdString(train.schedule))
                       .arg(train.warmup_steps)
                       .arg(train.warmup_steps == 1 ? QStringLiteral("step") : QStringLiteral("steps"));
    // "auto" shows what it means here (a device "auto" is taken as this machine's CPU).
    QString dtype = QString::fromStdString(config.runtime.dtype);
    if (isChoice(config.runtime.dtype, ComputeDtype::Auto))
        dtype += QStringLiteral(" → %1").arg(QString::fromLatin1(
            choiceName(resolveComputeDtype(config, /*on_cuda=*/config.runtime.device.rfind("cuda", 0) == 0))));
    out.device = QStringLiteral("%1 · %2").arg(QString::fromStdString(config.runtime.device), dtype);
    if (config.runtime.world_size > 1)
        out.device += QStringLiteral(" · %1 ranks").arg(config.runtime.world_size);
    if (config.runtime.expert_parallel > 1)
        out.device += QStringLiteral(" · EP %1").arg(config.runtime.expert_parallel);
    // The machine the batch panel plans for, when it is not the one runtime trains on; a named
    // kind resolves from its table alone (only "here" asks this machine).
    if (!isChoice(config.target.kind, TargetKind::Here))
        out.target = QString::fromStdString(resolveTarget(config).label);
    return out;
}

}  // namespace trainbench::gui
