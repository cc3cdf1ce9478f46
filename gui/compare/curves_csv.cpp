// Curves CSV: the points of the curves a Compare view shows, as CSV text with one point per line.
#include "compare/curves_csv.h"

namespace trainbench::gui {

namespace {

QString csvField(QString text) {
    if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) && !text.contains(QLatin1Char('\n')))
        return text;
    text.replace(QStringLiteral("\""), QStringLiteral("\"\""));
    return QLatin1Char('"') + text + QLatin1Char('"');
}

}  // namespace

QString curvesCsv(const std::vector<RunCurve>& curves) {
    QString out = QStringLiteral("run_id,step,tokens,wall_time,key,value\n");
    for (const RunCurve& curve : curves) {
        const QString run_id = csvField(curve.run_id);
        for (const MetricPoint& point : curve.points) {
            out += run_id + QLatin1Char(',') + QString::number(point.step) + QLatin1Char(',') +
                   QString::number(point.tokens) + QLatin1Char(',') + QString::number(point.wall_time, 'g', 17) +
                   QLatin1Char(',') + csvField(QString::fromStdString(point.key)) + QLatin1Char(',') +
                   QString::number(point.value, 'g', 17) + QLatin1Char('\n');
        }
    }
    return out;
}

}  // namespace trainbench::gui
