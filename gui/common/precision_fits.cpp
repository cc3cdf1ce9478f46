// PrecisionFits: the planner's peak and largest fitting micro-batch under each precision, and how the workbench writes them.
#include "common/precision_fits.h"

#include <cmath>
#include <functional>
#include <utility>

#include <QObject>
#include <QStringList>

#include "common/display_format.h"
#include "trainbench/compute_dtype.h"
#include "trainbench/config_choices.h"

namespace trainbench::gui {

namespace {

// `dtype` as it computes on the devices planned for: "auto" resolved.
std::string resolvedDtype(const RunConfig& config, const std::string& dtype, bool on_cuda) {
    if (!isChoice(dtype, ComputeDtype::Auto)) return dtype;
    RunConfig chosen = config;
    chosen.runtime.dtype = dtype;
    return choiceName(resolveComputeDtype(chosen, on_cuda));
}

// Plans one precision of a config: planOnTarget or planMemory, with the budget it is given.
using PlanOne = std::function<MemoryPlan(const RunConfig&)>;

// One precision of `config`: the planner's row when `rows` lists it, else planned by `plan_one`
// with that runtime.dtype and runtime.optimizer_dtype, as the planner plans its rows.
PrecisionFit fitOf(const RunConfig& config, const std::vector<PrecisionFit>& rows, const PlanOne& plan_one,
                   const std::string& dtype, const std::string& optimizer_dtype) {
    for (const PrecisionFit& fit : rows)
        if (fit.dtype == dtype && fit.optimizer_dtype == optimizer_dtype) return fit;
    RunConfig own = config;
    own.runtime.dtype = dtype;
    own.runtime.optimizer_dtype = optimizer_dtype;
    PrecisionFit fit;
    fit.dtype = dtype;
    fit.optimizer_dtype = optimizer_dtype;
    fit.plan = plan_one(own);
    fit.largest_micro_batch = fit.plan.largest_fitting_micro_batch;
    return fit;
}

// The planner's rows for `config`, the config's own found or added; `on_cuda`: the devices "auto"
// resolves on.
PrecisionFits fitsOf(const RunConfig& config, std::vector<PrecisionFit> rows, const PlanOne& plan_one, bool on_cuda) {
    PrecisionFits fits;
    fits.rows = std::move(rows);
    fits.auto_dtype = isChoice(config.runtime.dtype, ComputeDtype::Auto);
    const std::string dtype = resolvedDtype(config, config.runtime.dtype, on_cuda);
    const std::string& moments = config.runtime.optimizer_dtype;
    for (size_t i = 0; i < fits.rows.size(); ++i)
        if (fits.rows[i].dtype == dtype && fits.rows[i].optimizer_dtype == moments) fits.current = int(i);
    if (fits.current < 0) {
        fits.rows.push_back(fitOf(config, {}, plan_one, dtype, moments));
        fits.current = int(fits.rows.size()) - 1;
    }
    fits.limit_bytes = fits.rows.front().plan.limit_bytes;
    fits.budget = fits.limit_bytes > 0;
    return fits;
}

}  // namespace

const PrecisionFit* PrecisionFits::find(const std::string& dtype, const std::string& optimizer_dtype) const {
    for (const PrecisionFit& fit : rows)
        if (fit.dtype == dtype && fit.optimizer_dtype == optimizer_dtype) return &fit;
    return nullptr;
}

PrecisionFits precisionFitsOnTarget(const RunConfig& config, const TargetMachine& target) {
    return fitsOf(config, planPrecisionsOnTarget(config, target),
                  [&target](const RunConfig& variant) { return planOnTarget(variant, target); }, target.gpu);
}

PrecisionFit precisionFitOnTarget(const RunConfig& config, const TargetMachine& target, const PrecisionFits& fits,
                                  const std::string& dtype, const std::string& optimizer_dtype) {
    return fitOf(config, fits.rows,
                 [&target](const RunConfig& variant) { return planOnTarget(variant, target); },
                 resolvedDtype(config, dtype, target.gpu), optimizer_dtype);
}

PrecisionFits precisionFits(const RunConfig& config, int64_t limit_bytes) {
    return fitsOf(config, planPrecisions(config, limit_bytes),
                  [limit_bytes](const RunConfig& variant) { return planMemory(variant, limit_bytes); },
                  config.runtime.device.rfind("cuda", 0) == 0);
}

QString precisionName(const std::string& dtype, const std::string& optimizer_dtype) {
    const QString name = QString::fromStdString(dtype);
    return isChoice(optimizer_dtype, OptimizerDtype::Bf16) ? QObject::tr("%1 + bf16 moments").arg(name) : name;
}

QString precisionName(const PrecisionFit& fit) {
    return precisionName(fit.dtype, fit.optimizer_dtype);
}

QString largestMicroBatchText(const PrecisionFit& fit, bool budget) {
    if (!budget) return missingValue();
    return fit.largest_micro_batch > 0 ? QString::number(fit.largest_micro_batch) : QObject::tr("none");
}

QString largestMicroBatchChange(const PrecisionFit& fit, const PrecisionFit& base, bool budget) {
    if (!budget) return QString();
    const int64_t m = fit.largest_micro_batch, m0 = base.largest_micro_batch;
    if (m0 <= 0) return m > 0 ? QObject::tr("fits") : QString();
    if (m == m0) return QObject::tr("same");
    const long percent = std::lround(100.0 * double(m - m0) / double(m0));
    return percent > 0 ? QStringLiteral("+%1 %").arg(percent) : QStringLiteral("%1 %").arg(percent);
}

QString describePrecisionFit(const PrecisionFit& fit, bool budget) {
    const QString peak = formatBytes(fit.plan.peak_bytes);
    if (!budget) return QObject::tr("%1: peak %2 at m %3").arg(precisionName(fit), peak).arg(fit.plan.micro_batch_size);
    return fit.largest_micro_batch > 0
               ? QObject::tr("%1: peak %2, largest m %3").arg(precisionName(fit), peak).arg(fit.largest_micro_batch)
               : QObject::tr("%1: peak %2, no m fits").arg(precisionName(fit), peak);
}

QString describePrecisionFits(const PrecisionFits& fits, const QString& where) {
    const PrecisionFit* own = fits.currentFit();
    QStringList lines;
    lines << (fits.budget ? QObject::tr("At m %1 on %2, budget %3:")
                                .arg(own ? own->plan.micro_batch_size : 0)
                                .arg(where, formatBytes(fits.limit_bytes))
                          : QObject::tr("At m %1 on %2 (no budget known):").arg(own ? own->plan.micro_batch_size : 0).arg(where));
    for (size_t i = 0; i < fits.rows.size(); ++i) {
        QString line = describePrecisionFit(fits.rows[i], fits.budget);
        if (int(i) == fits.current) {
            const int colon = line.indexOf(QLatin1Char(':'));
            line.insert(colon, fits.auto_dtype ? QObject::tr(" (now, auto)") : QObject::tr(" (now)"));
        }
        lines << line;
    }
    return lines.join(QLatin1Char('\n'));
}

}  // namespace trainbench::gui
