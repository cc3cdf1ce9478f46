// MonitorView: the Training tab: the live plots and the expert-load heatmap under a bar of view controls, and the pages beside them.
#include "monitor/monitor_view.h"

#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "monitor/critical_batch_plot.h"
#include "monitor/expert_load_heatmap.h"
#include "monitor/metric_plots.h"

namespace trainbench::gui {

MonitorView::MonitorView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("monitorView"));
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    pages_ = new QTabWidget(this);
    pages_->setObjectName(QStringLiteral("trainingPages"));
    pages_->setDocumentMode(true);
    // One page needs no tabs: a window without other pages looks as it always did.
    pages_->setTabBarAutoHide(true);
    outer->addWidget(pages_);
    curves_page_ = new QWidget(pages_);
    curves_page_->setObjectName(QStringLiteral("curvesPage"));
    pages_->addTab(curves_page_, tr("Curves"));

    auto* layout = new QVBoxLayout(curves_page_);
    layout->setContentsMargins(0, 2, 0, 0);
    layout->setSpacing(2);

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(8, 0, 8, 0);
    bar->setSpacing(10);
    auto* x_label = new QLabel(tr("X axis:"), this);
    x_axis_combo_ = new QComboBox(this);
    x_axis_combo_->setObjectName(QStringLiteral("xAxisCombo"));
    x_axis_combo_->addItem(tr("Step"), static_cast<int>(XAxis::Step));
    x_axis_combo_->addItem(tr("Tokens seen"), static_cast<int>(XAxis::Tokens));
    x_axis_combo_->addItem(tr("Wall time"), static_cast<int>(XAxis::WallTime));
    x_axis_combo_->setToolTip(tr("Tokens seen compare fairly across runs whose batch sizes differ."));
    x_label->setBuddy(x_axis_combo_);
    log_loss_check_ = new QCheckBox(tr("Log loss"), this);
    log_loss_check_->setObjectName(QStringLiteral("logLossCheck"));
    log_grad_check_ = new QCheckBox(tr("Log grad norm"), this);
    log_grad_check_->setObjectName(QStringLiteral("logGradNormCheck"));
    outliers_check_ = new QCheckBox(tr("Ignore outliers"), this);
    outliers_check_->setObjectName(QStringLiteral("ignoreOutliersCheck"));
    outliers_check_->setChecked(true);
    outliers_check_->setToolTip(tr("Fit y to the 5th..95th percentile of what is shown: a spike is drawn, clipped, "
                                   "instead of flattening the curve."));
    auto* smoothing_name = new QLabel(tr("Smoothing:"), this);
    smoothing_slider_ = new QSlider(Qt::Horizontal, this);
    smoothing_slider_->setObjectName(QStringLiteral("smoothingSlider"));
    smoothing_slider_->setRange(0, 99);
    smoothing_slider_->setFixedWidth(90);
    smoothing_slider_->setToolTip(tr("Weight of the debiased EMA drawn over the raw loss and grad norm."));
    smoothing_name->setBuddy(smoothing_slider_);
    smoothing_label_ = new QLabel(this);
    smoothing_label_->setMinimumWidth(smoothing_label_->fontMetrics().horizontalAdvance(QStringLiteral("0.00")));
    export_button_ = new QToolButton(this);
    export_button_->setObjectName(QStringLiteral("exportButton"));
    export_button_->setText(tr("Export plot…"));
    export_button_->setToolTip(tr("Save the plots as PNG or PDF."));

    bar->addWidget(x_label);
    bar->addWidget(x_axis_combo_);
    bar->addSpacing(6);
    bar->addWidget(log_loss_check_);
    bar->addWidget(log_grad_check_);
    bar->addWidget(outliers_check_);
    bar->addSpacing(6);
    bar->addWidget(smoothing_name);
    bar->addWidget(smoothing_slider_);
    bar->addWidget(smoothing_label_);
    bar->addStretch(1);
    bar->addWidget(export_button_);
    layout->addLayout(bar);

    splitter_ = new QSplitter(Qt::Vertical, this);
    splitter_->setChildrenCollapsible(false);
    plots_ = new MetricPlots(splitter_);
    heatmap_ = new ExpertLoadHeatmap(splitter_);
    critical_batch_ = new CriticalBatchPlot(splitter_);
    splitter_->addWidget(plots_);
    splitter_->addWidget(critical_batch_);
    splitter_->addWidget(heatmap_);
    splitter_->setStretchFactor(0, 4);
    splitter_->setStretchFactor(1, 1);
    splitter_->setStretchFactor(2, 1);
    heatmap_->hide();
    critical_batch_->hide();
    layout->addWidget(splitter_, 1);

    smoothing_slider_->setValue(static_cast<int>(std::lround(plots_->smoothingWeight() * 100.0)));
    smoothing_label_->setText(QString::number(plots_->smoothingWeight(), 'f', 2));

    connect(x_axis_combo_, &QComboBox::currentIndexChanged, this,
            [this] { plots_->setXAxis(static_cast<XAxis>(x_axis_combo_->currentData().toInt())); });
    connect(log_loss_check_, &QCheckBox::toggled, this,
            [this](bool on) { plots_->setLogY(MetricPlots::Plot::Loss, on); });
    connect(log_grad_check_, &QCheckBox::toggled, this,
            [this](bool on) { plots_->setLogY(MetricPlots::Plot::GradNorm, on); });
    connect(outliers_check_, &QCheckBox::toggled, plots_, &MetricPlots::setIgnoreOutliers);
    connect(smoothing_slider_, &QSlider::valueChanged, this, [this](int value) {
        plots_->setSmoothingWeight(value / 100.0);
        smoothing_label_->setText(QString::number(plots_->smoothingWeight(), 'f', 2));
    });
    connect(export_button_, &QToolButton::clicked, this, &MonitorView::exportWithDialog);
    connect(heatmap_, &ExpertLoadHeatmap::dataStarted, this, &MonitorView::showHeatmap);
    connect(critical_batch_, &CriticalBatchPlot::dataStarted, this, &MonitorView::showCriticalBatch);
}

void MonitorView::resetRun(const RunConfig& config) {
    plots_->resetRun(config);
    heatmap_->reset();
    heatmap_->setExpertParallel(static_cast<int>(config.runtime.expert_parallel));
    heatmap_->setMainLayers(static_cast<int>(config.model.n_layers));
    critical_batch_->reset();
    // A dense model never reports expert loads, a run of one micro-batch a window no critical
    // batch: the plots get the whole height back.
    heatmap_->hide();
    critical_batch_->hide();
}

void MonitorView::addPoints(const QVector<MetricPoint>& points) {
    plots_->addPoints(points);
    heatmap_->addPoints(points);
    critical_batch_->addPoints(points);
}

bool MonitorView::addEvent(const RunEvent& event) {
    return plots_->addEvent(event);
}

void MonitorView::flushReplot() {
    plots_->flushReplot();
    if (heatmap_->isVisibleTo(this)) heatmap_->flushReplot();
    if (critical_batch_->isVisibleTo(this)) critical_batch_->flushReplot();
}

void MonitorView::setXAxis(XAxis axis) {
    x_axis_combo_->setCurrentIndex(x_axis_combo_->findData(static_cast<int>(axis)));
}

void MonitorView::addPage(QWidget* page) {
    pages_->addTab(page, page->windowTitle());
    connect(page, &QWidget::windowTitleChanged, this, [this, page](const QString& title) {
        pages_->setTabText(pages_->indexOf(page), title);
    });
}

void MonitorView::showPage(QWidget* page) {
    pages_->setCurrentWidget(page ? page : curves_page_);
}

QWidget* MonitorView::currentPage() const {
    QWidget* page = pages_->currentWidget();
    return page == curves_page_ ? nullptr : page;
}

bool MonitorView::exportPlot(const QString& path, int width, int height) {
    return plots_->exportPlot(path, width, height);
}

void MonitorView::exportWithDialog() {
    QString filter = tr("PNG image (*.png)");
    const QString path = QFileDialog::getSaveFileName(this, tr("Export plot"), QStringLiteral("training.png"),
                                                      tr("PNG image (*.png);;PDF document (*.pdf)"), &filter);
    if (path.isEmpty()) return;
    QString target = path;
    const bool pdf = filter.contains(QLatin1String("pdf"));
    if (!target.endsWith(QLatin1String(".png"), Qt::CaseInsensitive) &&
        !target.endsWith(QLatin1String(".pdf"), Qt::CaseInsensitive))
        target += pdf ? QStringLiteral(".pdf") : QStringLiteral(".png");
    if (!exportPlot(target))
        QMessageBox::warning(this, tr("Export plot"), tr("Could not write %1.").arg(target));
}

void MonitorView::showHeatmap() {
    if (!heatmap_->isHidden()) return;
    heatmap_->show();
    resizeLowerPanes();
}

void MonitorView::showCriticalBatch() {
    if (!critical_batch_->isHidden()) return;
    critical_batch_->show();
    resizeLowerPanes();
}

void MonitorView::resizeLowerPanes() {
    // About a fifth of the height each for the critical batch and the heatmap (enough for a
    // few layers' rows with their labels), the rest for the plots.
    const int total = splitter_->height();
    if (total <= 0) return;
    const int critical = critical_batch_->isHidden() ? 0 : total / 5;
    const int heatmap = heatmap_->isHidden() ? 0 : total / 5;
    splitter_->setSizes({total - critical - heatmap, critical, heatmap});
}

}  // namespace trainbench::gui
