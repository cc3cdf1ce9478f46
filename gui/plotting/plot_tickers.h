// PlotTickers: axis tick placement and labels for steps, token counts and bytes.
#pragma once

#include <QString>
#include <qcustomplot.h>

namespace trainbench::gui {

// "950", "12.5k", "3.2M", "1.05B": token counts stay readable at any scale.
QString formatSi(double value, int significant = 3);
// "512 MiB", "1.50 GiB": binary units, as allocators and nvidia-smi count.
QString formatBytes(double bytes);

// Optimizer steps are whole numbers: ticks at 1, 2 or 5 x 10^k and never finer than one step.
class StepTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange& range) override;
};

// Token counts: ticks at 1, 2 or 5 x 10^k labelled with SI suffixes.
class SiTicker : public QCPAxisTicker {
protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar format_char, int precision) override;
};

// Bytes: ticks at 1, 2 or 5 x 10^k MiB or GiB (GiB once the range reaches 1 GiB), labelled with
// the unit, so the axis needs no unit in its title.
class ByteTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar format_char, int precision) override;

private:
    double unit_ = 1024.0 * 1024.0;
};

}  // namespace trainbench::gui
