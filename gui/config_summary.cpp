// ConfigSummary: the key numbers of a run config as the text the workbench shows.
#include "config_summary.h"

#include <array>
#include <cmath>
#include <cstdlib>

#include <QLocale>

#include "trainbench/compute_dtype.h"
#include "trainbench/param_count.h"

namespace trainbench::gui {

QString formatCount(int64_t count) {
    const double magnitude = std::abs(static_cast<double>(count));
    if (magnitude < 1000.0) return QString::number(count);
    static constexpr std::array<const char*, 4> kPrefixes{"k", "M", "B", "T"};
    double scaled = static_cast<double>(count);
    size_t prefix = 0;
    scaled /= 1000.0;
    // Rounding can carry 999.6 k into "1000 k"; move to the next prefix instead.
    while (prefix + 1 < kPrefixes.size() && std::abs(scaled) >= 999.5) {
        scaled /= 1000.0;
        ++prefix;
    }
    const double abs_scaled = std::abs(scaled);
    const int decimals = abs_scaled < 9.995 ? 2 : (abs_scaled < 99.95 ? 1 : 0);
    return QStringLiteral("%1 %2").arg(QString::number(scaled, 'f', decimals),
                                       QString::fromLatin1(kPrefixes[prefix]));
}

QString formatGrouped(int64_t value) {
    return QLocale(QLocale::English, QLocale::UnitedStates).toString(static_cast<qlonglong>(value));
}

QString formatBytes(int64_t bytes) {
    if (std::abs(static_cast<double>(bytes)) < 1024.0) return QStringLiteral("%1 B").arg(bytes);
    static constexpr std::array<const char*, 5> kUnits{"KiB", "MiB", "GiB", "TiB", "PiB"};
    double scaled = static_cast<double>(bytes) / 1024.0;
    size_t unit = 0;
    // As in formatCount: 1023.9 KiB would print as "1024 KiB"; it is "1.00 MiB".
    while (unit + 1 < kUnits.size() && std::abs(scaled) >= 999.5) {
        scaled /= 1024.0;
        ++unit;
    }
    const double abs_scaled = std::abs(scaled);
    const int decimals = abs_scaled < 9.995 ? 2 : (abs_scaled < 99.95 ? 1 : 0);
    return QStringLiteral("%1 %2").arg(QString::number(scaled, 'f', decimals), QString::fromLatin1(kUnits[unit]));
}

QString formatBatchEquation(int64_t micro_batch, int64_t accumulation, int64_t world_size) {
    const int64_t global = micro_batch * accumulation * world_size;
    return QStringLiteral("m %1 × K %2 × W %3 = B %4 %5")
        .arg(micro_batch)
        .arg(accumulation)
        .arg(world_size)
        .arg(global)
        .arg(global == 1 ? QStringLiteral("sequence") : QStringLiteral("sequences"));
}

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
    out.steps = formatGrouped(config.optimizerSteps());
    out.learning_rate = train.schedule == "constant"
                            ? formatRate(train.lr)
                            : QStringLiteral("%1 → %2").arg(formatRate(train.lr), formatRate(train.min_lr));
    out.schedule = QStringLiteral("%1, %2 warmup %3")
                       .arg(QString::fromStdString(train.schedule))
                       .arg(train.warmup_steps)
                       .arg(train.warmup_steps == 1 ? QStringLiteral("step") : QStringLiteral("steps"));
    // "auto" shows what it means here (a device "auto" is taken as this machine's CPU).
    QString dtype = QString::fromStdString(config.runtime.dtype);
    if (config.runtime.dtype == "auto")
        dtype += QStringLiteral(" → %1").arg(QString::fromStdString(
            resolveComputeDtype(config, /*on_cuda=*/config.runtime.device.rfind("cuda", 0) == 0)));
    out.device = QStringLiteral("%1 · %2").arg(QString::fromStdString(config.runtime.device), dtype);
    if (config.runtime.world_size > 1)
        out.device += QStringLiteral(" · %1 ranks").arg(config.runtime.world_size);
    return out;
}

}  // namespace trainbench::gui
