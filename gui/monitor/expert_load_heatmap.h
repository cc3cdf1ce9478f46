// ExpertLoadHeatmap: tokens routed to each expert of each MoE layer in the newest step, as a colour map.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <QVector>
#include <qcustomplot.h>

#include "plotting/coalesced_replot.h"
#include "trainbench/metric_point.h"

namespace trainbench::gui {

// Rows are MoE layers (first layer on top), columns experts; a cell's colour is the number of
// tokens the router sent to that expert in the newest step. The right axis names each layer's
// max and mean load and their ratio: the imbalance aux-loss-free balancing should drive to 1.
// Fed by points keyed moe/layer<L>/expert<E>/tokens; moe/layer<L>/load_max_over_mean
// alone (what a run without per-expert points reports) fills the ratio but no cells.
// Redraws are coalesced like the live plots', at most one per CoalescedReplot::kIntervalMs.
class ExpertLoadHeatmap : public QCustomPlot {
    Q_OBJECT

public:
    explicit ExpertLoadHeatmap(QWidget* parent = nullptr);

    void reset();
    // Expert parallelism (runtime.expert_parallel): rank r_ep of each expert group holds the
    // experts [r_ep E / EP, (r_ep + 1) E / EP); the map draws a line between ranks' experts and
    // its title names who holds which and the routed tokens each rank received in the newest
    // step (moe/rank<r>/tokens_received).
    void setExpertParallel(int expert_parallel);
    // The main model's layers (model.n_layers): rows from there on are the multi-token-prediction
    // modules' MoE blocks (their published layer numbers), labelled "MTP k". 0: every row a layer.
    void setMainLayers(int layers);
    // The label of a row's layer index.
    QString layerLabel(int layer) const;
    // Takes the moe/layer<L>/... and moe/rank<r>/tokens_received keys; other keys are ignored.
    void addPoints(const QVector<MetricPoint>& points);
    // Replaces layer's loads with those of `step` (older steps are ignored).
    void setLayerLoads(int layer, int64_t step, const QVector<double>& tokens_per_expert);
    void flushReplot();
    bool replotPending() const { return replot_->pending(); }

    // True once any layer has per-expert loads or a max/mean ratio.
    bool hasData() const { return !layers_.empty(); }
    QList<int> layers() const;
    int expertCount() const { return expert_count_; }
    // The newest step any layer's loads come from; 0 before data.
    int64_t step() const { return newest_step_; }
    // What the colour map holds for this cell (after the coalesced redraw or flushReplot):
    // NaN for unknown cells.
    double cellLoad(int layer, int expert) const;
    double layerMax(int layer) const;
    double layerMean(int layer) const;
    // The right axis label of a layer: "max 412 · mean 256 · 1.61×".
    QString layerSummary(int layer) const;
    QCPColorMap* colorMap() const { return color_map_; }
    QString titleText() const { return title_->text(); }
    // Expert parallelism: the routed tokens rank `rank` received in the newest step; NaN unknown.
    double rankReceived(int rank) const;

Q_SIGNALS:
    // The first data of a run arrived: a dense model never sends any, so the heatmap can hide.
    void dataStarted();

private:
    struct LayerLoads {
        int64_t step = -1;
        std::map<int, double> tokens;  // by expert
        double max_over_mean = -1.0;   // the engine's ratio, when it sent one
    };

    LayerLoads& layerAt(int layer);
    void rebuild();
    void labelCells(const QList<int>& rows, int columns, double most);

    std::map<int, LayerLoads> layers_;
    int expert_count_ = 0;
    int64_t newest_step_ = 0;
    QCPColorMap* color_map_ = nullptr;
    QCPColorScale* color_scale_ = nullptr;
    QCPTextElement* title_ = nullptr;
    QCPItemText* placeholder_ = nullptr;
    std::vector<QCPItemText*> cell_labels_;
    int expert_parallel_ = 1;
    int main_layers_ = 0;
    std::map<int, double> received_;  // by rank, of received_step_
    int64_t received_step_ = -1;
    std::vector<QCPItemStraightLine*> rank_lines_;
    CoalescedReplot* replot_ = nullptr;  // each redraw rebuilds the map from layers_ first
};

}  // namespace trainbench::gui
