// ExpertLoadHeatmap: tokens routed to each expert of each MoE layer in the newest step, as a colour map.
#include "monitor/expert_load_heatmap.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "plotting/plot_tickers.h"
#include "trainbench/metric_keys.h"

namespace trainbench::gui {

namespace {

// Viridis: perceptually even and readable in grey, so equal load steps look equally far apart.
QCPColorGradient loadGradient() {
    QCPColorGradient gradient;
    gradient.clearColorStops();
    gradient.setColorStopAt(0.0, QColor(68, 1, 84));
    gradient.setColorStopAt(0.25, QColor(59, 82, 139));
    gradient.setColorStopAt(0.5, QColor(33, 145, 140));
    gradient.setColorStopAt(0.75, QColor(94, 201, 98));
    gradient.setColorStopAt(1.0, QColor(253, 231, 37));
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    return gradient;
}

}  // namespace

ExpertLoadHeatmap::ExpertLoadHeatmap(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("expertLoadHeatmap"));
    setMinimumHeight(140);
    QFont small_font = font();
    small_font.setPointSizeF(std::max(6.5, small_font.pointSizeF() - 1.0));

    title_ = new QCPTextElement(this, tr("Expert load: tokens per expert"), small_font);
    plotLayout()->insertRow(0);
    plotLayout()->addElement(0, 0, title_);
    plotLayout()->setRowSpacing(0);

    QCPAxisRect* rect = axisRect();
    rect->setupFullAxesBox(false);
    QCPAxis* experts = rect->axis(QCPAxis::atBottom);
    experts->setLabel(tr("expert"));
    experts->setTicker(QSharedPointer<QCPAxisTicker>(new StepTicker));
    experts->setNumberFormat(QStringLiteral("f"));
    experts->setNumberPrecision(0);
    // The first layer on top, as in a table of layers.
    rect->axis(QCPAxis::atLeft)->setRangeReversed(true);
    rect->axis(QCPAxis::atRight)->setRangeReversed(true);
    rect->axis(QCPAxis::atTop)->setVisible(false);
    for (QCPAxis* axis : rect->axes()) {
        axis->setTickLabelFont(small_font);
        axis->setLabelFont(small_font);
        axis->grid()->setVisible(false);
    }
    rect->axis(QCPAxis::atRight)->setTickLabels(true);

    color_map_ = new QCPColorMap(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    color_map_->setGradient(loadGradient());
    color_map_->setInterpolate(false);
    color_map_->setTightBoundary(false);
    color_scale_ = new QCPColorScale(this);
    plotLayout()->addElement(1, 1, color_scale_);
    color_scale_->setType(QCPAxis::atRight);
    color_scale_->setBarWidth(10);
    color_scale_->axis()->setLabel(tr("tokens"));
    color_scale_->axis()->setLabelFont(small_font);
    color_scale_->axis()->setTickLabelFont(small_font);
    color_scale_->axis()->setTicker(QSharedPointer<QCPAxisTicker>(new SiTicker));
    color_scale_->axis()->ticker()->setTickCount(3);
    color_map_->setColorScale(color_scale_);
    // Linking adopts the scale's gradient: set it on the scale, after the link.
    color_scale_->setGradient(loadGradient());
    // The scale spans exactly the rect's height.
    auto* margins = new QCPMarginGroup(this);
    rect->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    color_scale_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);

    placeholder_ = new QCPItemText(this);
    placeholder_->position->setType(QCPItemPosition::ptAxisRectRatio);
    placeholder_->position->setAxisRect(rect);
    placeholder_->position->setCoords(0.5, 0.5);
    placeholder_->setColor(QColor(120, 120, 120));
    placeholder_->setFont(small_font);

    replot_ = new CoalescedReplot(this, [this] {
        rebuild();
        replot();
    });
    reset();
}

void ExpertLoadHeatmap::reset() {
    layers_.clear();
    expert_count_ = 0;
    newest_step_ = 0;
    received_.clear();
    received_step_ = -1;
    rebuild();
    replot_->request();
}

ExpertLoadHeatmap::LayerLoads& ExpertLoadHeatmap::layerAt(int layer) {
    if (layers_.empty()) emit dataStarted();
    return layers_[layer];
}

void ExpertLoadHeatmap::addPoints(const QVector<MetricPoint>& points) {
    bool changed = false;
    for (const MetricPoint& point : points) {
        const auto key = metric::parseLoadKey(point.key);
        if (!key) continue;
        const int layer = key->layer, expert = key->expert;
        if (key->kind == metric::LoadKey::Kind::RankReceived) {
            if (point.step < received_step_) continue;
            if (point.step > received_step_) received_.clear(), received_step_ = point.step;
            received_[layer] = point.value;
            changed = true;
            continue;
        }
        LayerLoads& loads = layerAt(layer);
        if (point.step < loads.step) continue;  // a late point of an older step
        if (point.step > loads.step) {
            // Cells show one step: a new step's loads replace the old ones.
            loads.step = point.step;
            loads.tokens.clear();
            loads.max_over_mean = -1.0;
        }
        if (key->kind == metric::LoadKey::Kind::ExpertTokens) {
            loads.tokens[expert] = point.value;
            expert_count_ = std::max(expert_count_, expert + 1);
        } else {
            loads.max_over_mean = point.value;
        }
        newest_step_ = std::max(newest_step_, point.step);
        changed = true;
    }
    if (changed) replot_->request();
}

void ExpertLoadHeatmap::setLayerLoads(int layer, int64_t step, const QVector<double>& tokens_per_expert) {
    LayerLoads& loads = layerAt(layer);
    if (step < loads.step) return;
    loads.step = step;
    loads.tokens.clear();
    loads.max_over_mean = -1.0;
    for (qsizetype e = 0; e < tokens_per_expert.size(); ++e) loads.tokens[static_cast<int>(e)] = tokens_per_expert[e];
    expert_count_ = std::max(expert_count_, static_cast<int>(tokens_per_expert.size()));
    newest_step_ = std::max(newest_step_, step);
    replot_->request();
}

void ExpertLoadHeatmap::setExpertParallel(int expert_parallel) {
    expert_parallel_ = std::max(1, expert_parallel);
    replot_->request();
}

void ExpertLoadHeatmap::setMainLayers(int layers) {
    main_layers_ = std::max(0, layers);
    replot_->request();
}

QString ExpertLoadHeatmap::layerLabel(int layer) const {
    if (main_layers_ > 0 && layer >= main_layers_) return tr("MTP %1").arg(layer - main_layers_ + 1);
    return tr("layer %1").arg(layer);
}

double ExpertLoadHeatmap::rankReceived(int rank) const {
    const auto found = received_.find(rank);
    return found == received_.end() ? qQNaN() : found->second;
}

QList<int> ExpertLoadHeatmap::layers() const {
    QList<int> result;
    for (const auto& [layer, loads] : layers_) result << layer;
    return result;
}

double ExpertLoadHeatmap::cellLoad(int layer, int expert) const {
    const QList<int> rows = layers();
    const auto row = rows.indexOf(layer);
    QCPColorMapData* data = color_map_->data();
    if (row < 0 || expert < 0 || expert >= data->keySize() || row >= data->valueSize()) return qQNaN();
    return data->cell(expert, static_cast<int>(row));
}

double ExpertLoadHeatmap::layerMax(int layer) const {
    const auto found = layers_.find(layer);
    if (found == layers_.end() || found->second.tokens.empty()) return qQNaN();
    double most = -std::numeric_limits<double>::infinity();
    for (const auto& [expert, tokens] : found->second.tokens) most = std::max(most, tokens);
    return most;
}

double ExpertLoadHeatmap::layerMean(int layer) const {
    const auto found = layers_.find(layer);
    if (found == layers_.end() || found->second.tokens.empty() || expert_count_ == 0) return qQNaN();
    double sum = 0.0;
    for (const auto& [expert, tokens] : found->second.tokens) sum += tokens;
    // An expert that got no point got no tokens: the mean is over every expert.
    return sum / expert_count_;
}

QString ExpertLoadHeatmap::layerSummary(int layer) const {
    const auto found = layers_.find(layer);
    if (found == layers_.end()) return QString();
    const double most = layerMax(layer);
    const double mean = layerMean(layer);
    if (std::isfinite(most) && std::isfinite(mean)) {
        const QString ratio = mean > 0 ? QStringLiteral(" · %1×").arg(most / mean, 0, 'f', 2) : QString();
        return tr("max %1 · mean %2%3").arg(formatSi(most), formatSi(mean), ratio);
    }
    if (found->second.max_over_mean >= 0) return tr("max/mean %1×").arg(found->second.max_over_mean, 0, 'f', 2);
    return QString();
}

void ExpertLoadHeatmap::flushReplot() { replot_->flush(); }

void ExpertLoadHeatmap::labelCells(const QList<int>& rows, int columns, double most) {
    for (QCPItemText* label : cell_labels_) removeItem(label);
    cell_labels_.clear();
    // Numbers only where they fit: the previous layout's cell size decides (the first frame
    // of a run goes without). A 64-expert layer is read by its colours and the right axis.
    const QRect area = axisRect()->rect();
    if (rows.isEmpty() || expert_count_ == 0) return;
    const double cell_width = double(area.width()) / columns;
    const double cell_height = double(area.height()) / rows.size();
    if (cell_width < 38.0 || cell_height < 14.0) return;
    QFont font = this->font();
    font.setPointSizeF(std::max(6.5, font.pointSizeF() - 1.5));
    for (int row = 0; row < rows.size(); ++row) {
        for (const auto& [expert, tokens] : layers_.at(rows[row]).tokens) {
            auto* label = new QCPItemText(this);
            label->position->setAxes(axisRect()->axis(QCPAxis::atBottom), axisRect()->axis(QCPAxis::atLeft));
            label->position->setCoords(expert, row);
            label->setFont(font);
            label->setText(formatSi(tokens));
            // Dark text on the light (busy) end of the gradient, light text on the dark end.
            label->setColor(most > 0 && tokens / most > 0.6 ? QColor(20, 20, 20) : QColor(245, 245, 245));
            cell_labels_.push_back(label);
        }
    }
}

void ExpertLoadHeatmap::rebuild() {
    const QList<int> rows = layers();
    const int columns = std::max(expert_count_, 1);
    const int row_count = std::max<int>(static_cast<int>(rows.size()), 1);
    QCPColorMapData* data = color_map_->data();
    // QCPColorMap sizes a cell from the distance between the first and last cell centres, so a
    // single layer (or expert) would draw zero high: it gets two half-height copies instead.
    const int grid_columns = columns == 1 ? 2 : columns, grid_rows = row_count == 1 ? 2 : row_count;
    data->setSize(grid_columns, grid_rows);
    data->setRange(columns == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, columns - 1),
                   row_count == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, row_count - 1));
    data->fill(qQNaN());
    auto setCell = [&](int expert, int row, double tokens) {
        for (int x = expert; x < (columns == 1 ? 2 : expert + 1); ++x)
            for (int y = row; y < (row_count == 1 ? 2 : row + 1); ++y) data->setCell(x, y, tokens);
    };
    auto layer_labels = QSharedPointer<QCPAxisTickerText>::create();
    auto stat_labels = QSharedPointer<QCPAxisTickerText>::create();
    double most = 0.0;
    for (int row = 0; row < rows.size(); ++row) {
        const LayerLoads& loads = layers_.at(rows[row]);
        for (const auto& [expert, tokens] : loads.tokens) {
            setCell(expert, row, tokens);
            if (std::isfinite(tokens)) most = std::max(most, tokens);
        }
        layer_labels->addTick(row, layerLabel(rows[row]));
        stat_labels->addTick(row, layerSummary(rows[row]));
    }
    QCPAxisRect* rect = axisRect();
    rect->axis(QCPAxis::atLeft)->setTicker(layer_labels);
    rect->axis(QCPAxis::atRight)->setTicker(stat_labels);
    // Half a cell of room around the outer cells, so every cell is whole.
    rect->axis(QCPAxis::atBottom)->setRange(-0.5, columns - 0.5);
    // Every expert numbered while that stays legible.
    rect->axis(QCPAxis::atBottom)->ticker()->setTickCount(std::min(columns, 16));
    rect->axis(QCPAxis::atLeft)->setRange(-0.5, row_count - 0.5);
    rect->axis(QCPAxis::atRight)->setRange(-0.5, row_count - 0.5);
    color_scale_->setDataRange(QCPRange(0.0, std::max(most, 1.0)));
    labelCells(rows, columns, most);
    QString title = newest_step_ > 0 ? tr("Expert load: tokens per expert at step %1").arg(newest_step_)
                                     : tr("Expert load: tokens per expert");
    // Expert parallelism: a line between ranks' experts, who holds which, what each received.
    for (QCPItemStraightLine* line : rank_lines_) removeItem(line);
    rank_lines_.clear();
    if (expert_parallel_ > 1 && expert_count_ >= expert_parallel_ && expert_count_ % expert_parallel_ == 0) {
        const int per_rank = expert_count_ / expert_parallel_;
        for (int r = 1; r < expert_parallel_; ++r) {
            auto* line = new QCPItemStraightLine(this);
            line->point1->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
            line->point2->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
            line->point1->setCoords(r * per_rank - 0.5, 0.0);
            line->point2->setCoords(r * per_rank - 0.5, 1.0);
            line->setPen(QPen(QColor(255, 255, 255), 2));
            rank_lines_.push_back(line);
        }
        QStringList held;
        for (int r = 0; r < expert_parallel_; ++r)
            held << tr("EP rank %1: %2–%3").arg(r).arg(r * per_rank).arg((r + 1) * per_rank - 1);
        title += tr(" · EP %1 (%2)").arg(expert_parallel_).arg(held.join(QStringLiteral(", ")));
        if (!received_.empty()) {
            QStringList received;
            constexpr int kShown = 8;  // a wide world is read from the advice and the metrics
            for (const auto& [rank, tokens] : received_) {
                if (received.size() == kShown) {
                    received << QStringLiteral("…");
                    break;
                }
                received << tr("rank %1 %2").arg(rank).arg(formatSi(tokens));
            }
            title += tr("\nrouted tokens received: %1").arg(received.join(QStringLiteral(" · ")));
        }
    }
    title_->setText(title);
    const bool any_cells = expert_count_ > 0;
    placeholder_->setText(layers_.empty() ? tr("No expert loads yet: MoE runs report them each step.")
                                          : tr("This run reports only max/mean per layer (right), not per-expert loads."));
    placeholder_->setVisible(!any_cells);
}

}  // namespace trainbench::gui
