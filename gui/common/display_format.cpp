// The workbench's way of writing counts, bytes, durations, ranks' peaks and the batch identity.
#include "common/display_format.h"

#include <array>
#include <cmath>
#include <cstdlib>

#include <QLocale>
#include <QStringList>

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

QString formatRankPeaks(const std::vector<std::pair<QString, int64_t>>& peaks) {
    if (peaks.empty()) return QString();
    QStringList lines;
    if (peaks.size() <= 2) {
        for (const auto& [device, bytes] : peaks) lines << QStringLiteral("%1 %2").arg(device, formatBytes(bytes));
        return lines.join(QStringLiteral(" · "));
    }
    auto most = peaks.begin(), least = peaks.begin();
    for (auto it = peaks.begin(); it != peaks.end(); ++it) {
        if (it->second > most->second) most = it;
        if (it->second < least->second) least = it;
    }
    if (formatBytes(least->second) == formatBytes(most->second))
        return QStringLiteral("%1 on each of %2").arg(formatBytes(most->second)).arg(peaks.size());
    return QStringLiteral("%1 – %2 (%3 most)").arg(formatBytes(least->second), formatBytes(most->second), most->first);
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

QString missingValue() { return QStringLiteral("—"); }

QString formatDuration(double seconds) {
    if (!std::isfinite(seconds)) return missingValue();
    const auto whole = static_cast<long long>(std::floor(seconds));
    if (whole < 60) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
    return QStringLiteral("%1:%2:%3")
        .arg(whole / 3600)
        .arg((whole / 60) % 60, 2, 10, QLatin1Char('0'))
        .arg(whole % 60, 2, 10, QLatin1Char('0'));
}

}  // namespace trainbench::gui
