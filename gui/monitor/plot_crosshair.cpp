// PlotCrosshair: a vertical line through every row of a plot at the cursor's x, and per row a label with what the curves read there.
#include "monitor/plot_crosshair.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <QFontMetrics>

namespace trainbench::gui {

PlotCrosshair::PlotCrosshair(QCustomPlot* plot, std::vector<QCPAxisRect*> rects, const QFont& font, LinesAt lines_at)
    : plot_(plot), lines_at_(std::move(lines_at)) {
    for (QCPAxisRect* rect : rects) {
        Row row;
        row.rect = rect;
        row.line = new QCPItemStraightLine(plot);
        row.line->setLayer(QStringLiteral("overlay"));
        row.line->setClipAxisRect(rect);
        for (QCPItemPosition* end : {row.line->point1, row.line->point2}) {
            end->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
            end->setAxisRect(rect);
        }
        row.line->setPen(QPen(QColor(60, 60, 60, 160), 1.0));
        row.label = new QCPItemText(plot);
        row.label->setLayer(QStringLiteral("overlay"));
        row.label->setClipToAxisRect(false);
        row.label->position->setType(QCPItemPosition::ptAbsolute);
        row.label->setFont(font);
        row.label->setTextAlignment(Qt::AlignLeft);
        row.label->setPadding(QMargins(5, 3, 5, 3));
        row.label->setBrush(QColor(255, 255, 255, 235));
        row.label->setPen(QPen(QColor(160, 160, 160)));
        row.label->setColor(QColor(30, 30, 30));
        rows_.push_back(row);
    }
    hide();
}

void PlotCrosshair::showAt(double x) {
    if (!std::isfinite(x)) return;
    place(x);
    plot_->layer(QStringLiteral("overlay"))->replot();
}

void PlotCrosshair::place(double x) {
    x_ = x;
    if (rows_.empty()) return;
    const double cursor_px = rows_.front().rect->axis(QCPAxis::atBottom)->coordToPixel(x);
    for (Row& row : rows_) {
        QStringList lines = lines_at_(row.rect, x);
        lines.removeAll(QString());
        row.line->point1->setCoords(x, 0.0);
        row.line->point2->setCoords(x, 1.0);
        row.line->setVisible(true);
        row.label->setText(lines.join(QLatin1Char('\n')));
        row.label->setVisible(!lines.isEmpty());
        // The label sits beside the line at the top of its row, on the right while it fits
        // there, else on the left, and never past the widget's edges.
        const QRect area = row.rect->rect();
        const QMargins padding = row.label->padding();
        const int label_width = QFontMetrics(row.label->font())
                                    .boundingRect(QRect(), Qt::AlignLeft, row.label->text())
                                    .width() + padding.left() + padding.right() + 2;
        double left = cursor_px + 8;
        if (left + label_width > plot_->width()) left = cursor_px - 8 - label_width;
        left = std::clamp(left, 0.0, std::max(0.0, double(plot_->width() - label_width)));
        row.label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        row.label->position->setCoords(left, area.top() + 3);
    }
}

void PlotCrosshair::hide() {
    const bool was_visible = visible();
    x_ = qQNaN();
    for (Row& row : rows_) {
        row.line->setVisible(false);
        row.label->setVisible(false);
    }
    if (was_visible) plot_->layer(QStringLiteral("overlay"))->replot();
}

bool PlotCrosshair::visible() const { return std::isfinite(x_); }

QString PlotCrosshair::text() const {
    QStringList parts;
    for (const Row& row : rows_)
        if (row.label->visible()) parts << row.label->text();
    return parts.join(QLatin1Char('\n'));
}

bool nearestPoint(const QCPGraph* graph, double x, QCPGraphData* out) {
    const auto data = graph->data();
    if (data->isEmpty()) return false;
    auto it = data->findBegin(x, false);
    if (it == data->constEnd()) it = data->constEnd() - 1;
    if (it != data->constBegin() && std::abs((it - 1)->key - x) <= std::abs(it->key - x)) --it;
    *out = *it;
    return true;
}

}  // namespace trainbench::gui
