// MonitorView: the Training tab: the live plots and the expert-load heatmap under a bar of view controls, and the pages beside them.
#pragma once

#include <QVector>
#include <QWidget>

#include "common/x_axis.h"
#include "trainbench/metric_point.h"
#include "trainbench/run_config.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QSplitter;
class QTabWidget;
class QToolButton;

namespace trainbench::gui {

class CriticalBatchPlot;
class ExpertLoadHeatmap;
class MetricPlots;

// Widgets that tests drive carry object names: xAxisCombo, logLossCheck, logGradNormCheck,
// ignoreOutliersCheck, smoothingSlider (weight x 100), exportButton, metricPlots,
// criticalBatchPlot and expertLoadHeatmap. The heatmap shows once a run reports expert loads
// (MoE runs only), the critical batch once it has an estimate (two micro-batches a window).
// The plots are the first page (curvesPage) of trainingPages; the shell adds others (the
// Samples page) with addPage, the tab bar showing once there are two.
class MonitorView : public QWidget {
    Q_OBJECT

public:
    explicit MonitorView(QWidget* parent = nullptr);

    MetricPlots* plots() const { return plots_; }
    ExpertLoadHeatmap* heatmap() const { return heatmap_; }
    CriticalBatchPlot* criticalBatchPlot() const { return critical_batch_; }

    void resetRun(const RunConfig& config);
    void addPoints(const QVector<MetricPoint>& points);
    // Marks the kinds MetricPlots marks; returns whether this one was.
    bool addEvent(const RunEvent& event);
    void flushReplot();

    void setXAxis(XAxis axis);

    // A page beside the plots, its tab titled by the page's window title, which it follows (a
    // count in the title says what arrived while another page is open).
    void addPage(QWidget* page);
    // Opens `page` (one added), or the plots for nullptr.
    void showPage(QWidget* page);
    QWidget* currentPage() const;
    // The plots as PNG or PDF (by suffix) at their on-screen size, or width x height when given.
    bool exportPlot(const QString& path, int width = 0, int height = 0);

public Q_SLOTS:
    // Asks for a file name, then exports.
    void exportWithDialog();

private:
    void showHeatmap();
    void showCriticalBatch();
    void resizeLowerPanes();

    QTabWidget* pages_ = nullptr;
    QWidget* curves_page_ = nullptr;
    MetricPlots* plots_ = nullptr;
    ExpertLoadHeatmap* heatmap_ = nullptr;
    CriticalBatchPlot* critical_batch_ = nullptr;
    QSplitter* splitter_ = nullptr;
    QComboBox* x_axis_combo_ = nullptr;
    QCheckBox* log_loss_check_ = nullptr;
    QCheckBox* log_grad_check_ = nullptr;
    QCheckBox* outliers_check_ = nullptr;
    QSlider* smoothing_slider_ = nullptr;
    QLabel* smoothing_label_ = nullptr;
    QToolButton* export_button_ = nullptr;
};

}  // namespace trainbench::gui
