// PlotTickers: axis tick placement and labels for steps, token counts and bytes.
#include "plotting/plot_tickers.h"

#include <cmath>
#include <initializer_list>

#include "common/display_format.h"

namespace trainbench::gui {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// The smallest of 1, 2 or 5 x 10^k that is at least `exact`.
double niceStep(double exact) {
    if (!(exact > 0.0)) return 1.0;
    const double magnitude = std::pow(10.0, std::floor(std::log10(exact)));
    for (double mantissa : {1.0, 2.0, 5.0})
        if (mantissa * magnitude >= exact * (1.0 - 1e-9)) return mantissa * magnitude;
    return 10.0 * magnitude;
}

}  // namespace

QString formatSi(double value, int significant) {
    if (!std::isfinite(value)) return missingValue();
    const double magnitude = std::abs(value);
    struct Scale {
        double factor;
        const char* suffix;
    };
    for (const Scale& scale : {Scale{1e12, "T"}, Scale{1e9, "B"}, Scale{1e6, "M"}, Scale{1e3, "k"}})
        if (magnitude >= scale.factor)
            return QString::number(value / scale.factor, 'g', significant) + QLatin1String(scale.suffix);
    return QString::number(value, 'g', std::max(significant, 4));
}

QString formatBytes(double bytes) {
    if (!std::isfinite(bytes)) return missingValue();
    if (std::abs(bytes) >= kGiB) return QStringLiteral("%1 GiB").arg(bytes / kGiB, 0, 'f', 2);
    if (std::abs(bytes) >= kMiB) return QStringLiteral("%1 MiB").arg(bytes / kMiB, 0, 'f', 1);
    return QStringLiteral("%1 KiB").arg(bytes / 1024.0, 0, 'f', 1);
}

double StepTicker::getTickStep(const QCPRange& range) {
    const double exact = range.size() / (mTickCount + 1e-10);
    return exact <= 1.0 ? 1.0 : niceStep(exact);
}

QString SiTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    return std::abs(tick) < 1e-9 ? QStringLiteral("0") : formatSi(tick);
}

double ByteTicker::getTickStep(const QCPRange& range) {
    unit_ = std::max(std::abs(range.upper), std::abs(range.lower)) >= kGiB ? kGiB : kMiB;
    return niceStep(range.size() / unit_ / (mTickCount + 1e-10)) * unit_;
}

QString ByteTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    const double value = tick / unit_;
    const QString number = std::abs(value) < 1e-9 ? QStringLiteral("0") : QString::number(value, 'g', 4);
    return number + (unit_ == kGiB ? QStringLiteral(" GiB") : QStringLiteral(" MiB"));
}

}  // namespace trainbench::gui
