// CompareSummary: the numbers that set runs apart in the Compare view, computed from their stored points.
#include "compare/compare_summary.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <QCoreApplication>

#include "common/display_format.h"
#include "compare/config_diff.h"
#include "trainbench/metric_keys.h"

namespace trainbench::gui {

namespace {

int64_t configInteger(const std::map<QString, QString>& config, const char* key) {
    const auto found = config.find(QString::fromLatin1(key));
    if (found == config.end()) return 0;
    bool ok = false;
    const double value = found->second.toDouble(&ok);
    return ok ? static_cast<int64_t>(std::llround(value)) : 0;
}

QString numberOrMissing(double value, int decimals) {
    return std::isfinite(value) ? QString::number(value, 'f', decimals) : missingValue();
}

QString countOrMissing(int64_t value) {
    return value > 0 ? QString::number(value) : missingValue();
}

}  // namespace

bool isPeakMemoryKey(const std::string& key) {
    const auto parsed = metric::parseMemoryKey(key);
    return parsed && parsed->what == metric::kPeakBytes;
}

CompareSummary summarizeForComparison(const RunRecord& run, const std::vector<MetricPoint>& loss,
                                      const std::vector<MetricPoint>& throughput,
                                      const std::vector<MetricPoint>& peaks) {
    CompareSummary summary;
    summary.run_id = QString::fromStdString(run.run_id);
    summary.name = QString::fromStdString(run.name.empty() ? run.run_id : run.name);

    double latest_wall_time = -1.0;
    for (const auto* points : {&loss, &throughput, &peaks})
        for (const MetricPoint& point : *points) latest_wall_time = std::max(latest_wall_time, point.wall_time);
    if (latest_wall_time >= 0.0) summary.wall_time_s = latest_wall_time;

    for (const MetricPoint& point : loss) {
        if (!std::isfinite(point.value)) continue;
        summary.final_loss = point.value;
        if (!(point.value >= summary.best_loss)) summary.best_loss = point.value;  // NaN start: first wins
    }
    if (std::isnan(summary.final_loss) && run.final_loss) summary.final_loss = *run.final_loss;

    double sum = 0.0;
    int64_t count = 0;
    for (const MetricPoint& point : throughput) {
        if (!std::isfinite(point.value)) continue;
        sum += point.value;
        ++count;
    }
    if (count > 0) summary.tokens_per_s = sum / static_cast<double>(count);

    for (const MetricPoint& point : peaks)
        if (std::isfinite(point.value) && !(point.value <= summary.peak_memory_bytes))
            summary.peak_memory_bytes = point.value;

    const std::map<QString, QString> config = flattenConfigJson(run.config_json);
    summary.micro_batch_size = configInteger(config, "train.micro_batch_size");
    summary.accumulation_steps = configInteger(config, "train.gradient_accumulation_steps");
    summary.world_size = configInteger(config, "runtime.world_size");
    summary.global_batch_size = configInteger(config, "train.global_batch_size");
    if (summary.global_batch_size <= 0)
        summary.global_batch_size = summary.micro_batch_size * summary.accumulation_steps * summary.world_size;
    return summary;
}

CompareSummary summarizeStoredRun(RunStore& store, const RunRecord& run, const std::vector<std::string>& keys) {
    std::vector<MetricPoint> peaks;
    for (const std::string& key : keys) {
        if (!isPeakMemoryKey(key)) continue;
        std::vector<MetricPoint> points = store.metrics(run.run_id, key);
        peaks.insert(peaks.end(), points.begin(), points.end());
    }
    return summarizeForComparison(run, store.metrics(run.run_id, metric::kLoss),
                                  store.metrics(run.run_id, metric::kTokensPerSecond), peaks);
}

QString CompareSummaryTable::header(Column column) {
    switch (column) {
    case RunName: return QCoreApplication::translate("CompareSummaryTable", "Run");
    case FinalLoss: return QCoreApplication::translate("CompareSummaryTable", "Final loss");
    case BestLoss: return QCoreApplication::translate("CompareSummaryTable", "Best loss");
    case TokensPerS: return QCoreApplication::translate("CompareSummaryTable", "Tokens / s");
    case PeakMemory: return QCoreApplication::translate("CompareSummaryTable", "Peak memory");
    case MicroBatch: return QStringLiteral("m");
    case Accumulation: return QStringLiteral("K");
    case World: return QStringLiteral("W");
    case GlobalBatch: return QStringLiteral("B");
    case WallTime: return QCoreApplication::translate("CompareSummaryTable", "Wall time");
    case ColumnCount: break;
    }
    return QString();
}

QString CompareSummaryTable::text(const CompareSummary& summary, Column column) {
    switch (column) {
    case RunName: return summary.name;
    case FinalLoss: return numberOrMissing(summary.final_loss, 4);
    case BestLoss: return numberOrMissing(summary.best_loss, 4);
    case TokensPerS:
        return std::isfinite(summary.tokens_per_s) ? formatGrouped(std::llround(summary.tokens_per_s)) : missingValue();
    case PeakMemory:
        return std::isfinite(summary.peak_memory_bytes) ? formatBytes(static_cast<int64_t>(summary.peak_memory_bytes))
                                                        : missingValue();
    case MicroBatch: return countOrMissing(summary.micro_batch_size);
    case Accumulation: return countOrMissing(summary.accumulation_steps);
    case World: return countOrMissing(summary.world_size);
    case GlobalBatch: return countOrMissing(summary.global_batch_size);
    case WallTime: return formatDuration(summary.wall_time_s);
    case ColumnCount: break;
    }
    return QString();
}

}  // namespace trainbench::gui
