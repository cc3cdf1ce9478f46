// CompareView: the selected runs side by side: overlaid curves of one key, a summary table and a config diff.
#include "compare/compare_view.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "compare/config_diff.h"
#include "compare/seed_groups.h"
#include "common/display_format.h"
#include "trainbench/run_store.h"

namespace trainbench::gui {

namespace {

// Matplotlib's tab10: distinct at a glance and in print.
const QColor kRunColors[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},   {148, 103, 189},
                             {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};

QColor runColor(size_t index) {
    return kRunColors[index % (sizeof(kRunColors) / sizeof(kRunColors[0]))];
}

QTableWidgetItem* cell(const QString& text, Qt::Alignment alignment = Qt::AlignRight | Qt::AlignVCenter) {
    auto* item = new QTableWidgetItem(text);
    item->setTextAlignment(alignment);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    return item;
}

void styleTable(QTableWidget* table) {
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setAlternatingRowColors(true);
    table->setWordWrap(false);
    table->verticalHeader()->hide();
    table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 8);
    table->horizontalHeader()->setHighlightSections(false);
}

}  // namespace

CompareView::CompareView(const QString& store_folder, QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("compareView"));
    const QString folder = store_folder.isEmpty() ? QString::fromStdString(RunStore::defaultFolder()) : store_folder;
    runs_ = new CompareRuns(folder, this);
    connect(runs_, &CompareRuns::failed, this, [this](const QString& message) {
        status_label_->setFullText(tr("Cannot read the run store: %1").arg(message));
        Q_EMIT loadFailed(message);
    });
    connect(runs_, &CompareRuns::runsRead, this, &CompareView::showRuns);
    connect(runs_, &CompareRuns::curvesRead, this, &CompareView::showCurves);
    connect(runs_, &CompareRuns::curveGrew, this, [this] {
        plotCurves();
        showPointCount();
    });
    connect(runs_, &CompareRuns::runChanged, this, [this] {
        showSummary();
        showPointCount();
    });
    buildUi();
}

void CompareView::buildUi() {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 8, 8, 8);
    layout->setSpacing(6);

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Key:"), this));
    key_combo_ = new QComboBox(this);
    key_combo_->setObjectName(QStringLiteral("compareKeyCombo"));
    key_combo_->setMinimumContentsLength(22);
    key_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    key_combo_->addItem(QString::fromLatin1(kDefaultKey));
    bar->addWidget(key_combo_);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("X axis:"), this));
    axis_combo_ = new QComboBox(this);
    axis_combo_->setObjectName(QStringLiteral("compareAxisCombo"));
    axis_combo_->addItem(tr("tokens seen"), static_cast<int>(XAxis::Tokens));
    axis_combo_->addItem(tr("optimizer step"), static_cast<int>(XAxis::Step));
    axis_combo_->addItem(tr("wall time"), static_cast<int>(XAxis::WallTime));
    axis_combo_->setToolTip(tr("Tokens seen is the fair axis when runs differ in effective batch size."));
    bar->addWidget(axis_combo_);
    bar->addSpacing(12);
    group_seeds_check_ = new QCheckBox(tr("Group seeds"), this);
    group_seeds_check_->setObjectName(QStringLiteral("groupSeedsCheck"));
    group_seeds_check_->setToolTip(
        tr("Runs whose configs differ only in train.seed / data.seed: one mean line with a min-max band."));
    bar->addWidget(group_seeds_check_);
    bar->addSpacing(12);
    status_label_ = new ElidedLabel(this);
    status_label_->setObjectName(QStringLiteral("compareStatusLabel"));
    status_label_->setStyleSheet(QStringLiteral("color: #555;"));
    // The message elides (whole in its tooltip) rather than widen the window: every tab shares
    // its minimum width.
    bar->addWidget(status_label_, 1);
    export_button_ = new QPushButton(tr("Export CSV…"), this);
    export_button_->setObjectName(QStringLiteral("exportCsvButton"));
    export_button_->setToolTip(tr("Every point of the shown curves: run_id, step, tokens, wall_time, key, value."));
    bar->addWidget(export_button_);
    export_plot_button_ = new QPushButton(tr("Export plot…"), this);
    export_plot_button_->setObjectName(QStringLiteral("exportPlotButton"));
    export_plot_button_->setToolTip(tr("The plot as PNG or PDF (the file's suffix decides)."));
    bar->addWidget(export_plot_button_);
    layout->addLayout(bar);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->setObjectName(QStringLiteral("compareSplitter"));
    splitter->setChildrenCollapsible(false);

    plot_ = new QCustomPlot(splitter);
    plot_->setObjectName(QStringLiteral("comparePlot"));
    plot_->setMinimumHeight(220);
    plot_->setNoAntialiasingOnDrag(true);
    connect(plot_, &QCustomPlot::beforeReplot, this, [this] {
        for (auto& graph : decimated_) graph->refresh();
    });
    plot_->setAutoAddPlottableToLegend(false);
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    for (QCPAxis* axis : plot_->axisRect()->axes()) {
        axis->grid()->setPen(QPen(QColor(225, 225, 225), 0, Qt::SolidLine));
        axis->grid()->setSubGridVisible(false);
    }
    QFont label_font = font();
    label_font.setPointSizeF(label_font.pointSizeF() + 1.0);
    plot_->xAxis->setLabelFont(label_font);
    plot_->yAxis->setLabelFont(label_font);
    plot_->xAxis->setNumberFormat(QStringLiteral("f"));
    plot_->xAxis->setNumberPrecision(0);
    plot_->legend->setVisible(true);
    plot_->legend->setFont(font());
    plot_->legend->setBrush(QColor(255, 255, 255, 215));
    plot_->legend->setBorderPen(QPen(QColor(190, 190, 190)));
    plot_->legend->setRowSpacing(0);
    plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) {
        view_moved_by_user_ = false;
        plotCurves();
    });
    connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent*) { view_moved_by_user_ = true; });
    connect(plot_, &QCustomPlot::mouseWheel, this, [this](QWheelEvent*) { view_moved_by_user_ = true; });

    summary_table_ = new QTableWidget(0, CompareSummaryTable::ColumnCount, splitter);
    summary_table_->setObjectName(QStringLiteral("compareSummaryTable"));
    QStringList headers;
    for (int column = 0; column < CompareSummaryTable::ColumnCount; ++column)
        headers << CompareSummaryTable::header(static_cast<SummaryColumn>(column));
    summary_table_->setHorizontalHeaderLabels(headers);
    styleTable(summary_table_);
    summary_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    summary_table_->horizontalHeader()->setSectionResizeMode(RunName, QHeaderView::Stretch);
    summary_table_->setMinimumHeight(80);

    auto* diff_box = new QWidget(splitter);
    auto* diff_layout = new QVBoxLayout(diff_box);
    diff_layout->setContentsMargins(0, 0, 0, 0);
    diff_layout->setSpacing(4);
    auto* diff_bar = new QHBoxLayout;
    auto* diff_title = new QLabel(tr("Config differences"), diff_box);
    QFont bold = diff_title->font();
    bold.setBold(true);
    diff_title->setFont(bold);
    diff_bar->addWidget(diff_title);
    diff_bar->addStretch(1);
    show_all_keys_ = new QCheckBox(tr("show all keys"), diff_box);
    show_all_keys_->setObjectName(QStringLiteral("showAllKeysCheck"));
    diff_bar->addWidget(show_all_keys_);
    diff_layout->addLayout(diff_bar);
    diff_table_ = new QTableWidget(0, 1, diff_box);
    diff_table_->setObjectName(QStringLiteral("configDiffTable"));
    styleTable(diff_table_);
    diff_table_->horizontalHeader()->setStretchLastSection(true);
    diff_table_->setMinimumHeight(80);
    diff_layout->addWidget(diff_table_, 1);

    splitter->addWidget(plot_);
    splitter->addWidget(summary_table_);
    splitter->addWidget(diff_box);
    splitter->setStretchFactor(0, 5);
    splitter->setStretchFactor(1, 1);
    splitter->setStretchFactor(2, 2);
    // Room for a handful of summary rows without scrolling; the diff is usually short.
    splitter->setSizes({430, 130, 160});
    layout->addWidget(splitter, 1);

    connect(key_combo_, &QComboBox::currentTextChanged, this, [this] { loadCurves(); });
    connect(axis_combo_, &QComboBox::currentIndexChanged, this, [this] { plotCurves(); });
    connect(show_all_keys_, &QCheckBox::toggled, this, [this] { showConfigDiff(); });
    connect(export_button_, &QPushButton::clicked, this, &CompareView::exportWithDialog);
    connect(export_plot_button_, &QPushButton::clicked, this, &CompareView::exportPlotWithDialog);
    connect(group_seeds_check_, &QCheckBox::toggled, this, [this](bool checked) {
        // Only a click is a wish; the box is also set when the selection has no group.
        if (!group_seeds_check_->isEnabled()) return;
        group_seeds_wanted_ = checked;
        updateGrouping();
        showSummary();
        plotCurves();
    });

    placeholder_ = new QCPItemText(plot_);
    placeholder_->position->setType(QCPItemPosition::ptAxisRectRatio);
    placeholder_->position->setCoords(0.5, 0.5);
    placeholder_->setPositionAlignment(Qt::AlignCenter);
    placeholder_->setText(tr("Select runs in the list (Ctrl/Shift-click for several) to overlay their curves."));
    placeholder_->setColor(QColor(130, 130, 130));
    placeholder_->setFont(label_font);

    status_label_->setFullText(tr("Select runs in the list to compare them."));
    export_button_->setEnabled(false);
    group_seeds_check_->setEnabled(false);
    showConfigDiff();
    plotCurves();
}

void CompareView::setRuns(const QStringList& run_ids) {
    if (!runs_->setRuns(run_ids)) return;
    // None: everything is shown already (runsRead and curvesRead came at once).
    if (!run_ids.isEmpty())
        status_label_->setFullText(tr("Loading %n run(s)…", nullptr, static_cast<int>(run_ids.size())));
}

void CompareView::showRuns(const QStringList& missing) {
    std::vector<std::string> configs;
    for (const CompareRuns::Run& run : runs_->runs()) configs.push_back(run.record.config_json);
    seed_groups_ = groupBySeed(configs);
    {
        const QSignalBlocker blocker(group_seeds_check_);
        group_seeds_check_->setEnabled(hasSeedGroup(seed_groups_));
        group_seeds_check_->setChecked(group_seeds_check_->isEnabled() && group_seeds_wanted_);
    }
    updateGrouping();
    showSummary();
    showConfigDiff();

    // The keys any selected run has; the chosen one stays while some run has it.
    std::set<QString> keys;
    for (const CompareRuns::Run& run : runs_->runs())
        for (const std::string& key : run.keys) keys.insert(QString::fromStdString(key));
    QString current = key_combo_->currentText();
    if (!keys.count(current)) current = QString::fromLatin1(kDefaultKey);
    if (!keys.empty() && !keys.count(current)) current = *keys.begin();
    {
        const QSignalBlocker blocker(key_combo_);
        key_combo_->clear();
        for (const QString& key : keys) key_combo_->addItem(key);
        if (keys.empty()) key_combo_->addItem(current);
        key_combo_->setCurrentText(current);
    }
    if (!missing.isEmpty()) {
        const QString message =
            tr("not in the store %1: %2").arg(runs_->folder(), missing.join(QStringLiteral(", ")));
        Q_EMIT loadFailed(message);
    }
    loadCurves();
}

void CompareView::loadCurves() {
    view_moved_by_user_ = false;
    runs_->loadCurves(key_combo_->currentText().toStdString());
}

void CompareView::showCurves() {
    plotCurves();
    showPointCount();
    Q_EMIT loaded();
}

void CompareView::showPointCount() {
    size_t points = 0;
    for (const RunCurve& curve : curves()) points += curve.points.size();
    const int running = runs_->runningCount();
    if (runs_->runs().empty())
        status_label_->setFullText(runIds().isEmpty() ? tr("Select runs in the list to compare them.")
                                                      : tr("None of the selected runs is in the store."));
    else
        status_label_->setFullText(tr("%n run(s) · %1 points", nullptr, static_cast<int>(runs_->runs().size()))
                                   .arg(formatGrouped(static_cast<int64_t>(points))) +
                               (running > 0 ? tr(" · %n running", nullptr, running) : QString()));
    export_button_->setEnabled(points > 0);
}

bool CompareView::isPolling() const {
    return runs_->isPolling();
}

void CompareView::showSummary() {
    const std::vector<CompareSummary>& rows = summaries();
    summary_table_->setRowCount(static_cast<int>(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i) {
        const CompareSummary& summary = rows[i];
        const int row = static_cast<int>(i);
        QTableWidgetItem* name = cell(CompareSummaryTable::text(summary, RunName), Qt::AlignLeft | Qt::AlignVCenter);
        name->setForeground(colorOfRun(i));
        name->setToolTip(summary.run_id);
        summary_table_->setItem(row, RunName, name);
        for (int column = RunName + 1; column < CompareSummaryTable::ColumnCount; ++column)
            summary_table_->setItem(row, column,
                                    cell(CompareSummaryTable::text(summary, static_cast<SummaryColumn>(column))));
    }
}

void CompareView::showConfigDiff() {
    std::vector<std::string> configs;
    QStringList headers{tr("Key")};
    for (const CompareRuns::Run& run : runs_->runs()) configs.push_back(run.record.config_json);
    for (const CompareSummary& summary : summaries()) headers << summary.name;
    const std::vector<ConfigDiffRow> rows = configDiff(configs, show_all_keys_->isChecked());
    diff_table_->clear();
    diff_table_->setColumnCount(static_cast<int>(headers.size()));
    diff_table_->setHorizontalHeaderLabels(headers);
    diff_table_->setRowCount(static_cast<int>(rows.size()));
    for (size_t r = 0; r < rows.size(); ++r) {
        const int row = static_cast<int>(r);
        diff_table_->setItem(row, 0, cell(rows[r].key, Qt::AlignLeft | Qt::AlignVCenter));
        for (int c = 0; c < rows[r].values.size(); ++c) {
            const QString& value = rows[r].values[c];
            QTableWidgetItem* item = cell(value.isEmpty() ? missingValue() : value, Qt::AlignLeft | Qt::AlignVCenter);
            item->setToolTip(value);
            diff_table_->setItem(row, c + 1, item);
        }
    }
    if (!runs_->runs().empty() && rows.empty())
        diff_table_->setToolTip(tr("The selected runs have the same config."));
    else
        diff_table_->setToolTip(QString());
    diff_table_->resizeColumnToContents(0);
    diff_table_->setColumnWidth(0, std::max(diff_table_->columnWidth(0) + 12, 200));
    for (int c = 1; c < diff_table_->columnCount(); ++c) diff_table_->setColumnWidth(c, 160);
}

bool CompareView::setKey(const QString& key) {
    const int index = key_combo_->findText(key);
    if (index < 0) return false;
    key_combo_->setCurrentIndex(index);
    return true;
}

QString CompareView::key() const {
    return key_combo_->currentText();
}

void CompareView::setAxis(XAxis axis) {
    axis_combo_->setCurrentIndex(axis_combo_->findData(static_cast<int>(axis)));
}

XAxis CompareView::axis() const {
    return static_cast<XAxis>(axis_combo_->currentData().toInt());
}

void CompareView::updateGrouping() {
    plot_groups_.clear();
    if (groupSeeds()) {
        plot_groups_ = seed_groups_;
    } else {
        for (size_t i = 0; i < runs_->runs().size(); ++i) plot_groups_.push_back({i});
    }
}

void CompareView::setGroupSeeds(bool group) {
    group_seeds_wanted_ = group;
    {
        const QSignalBlocker blocker(group_seeds_check_);
        group_seeds_check_->setChecked(group_seeds_check_->isEnabled() && group);
    }
    updateGrouping();
    showSummary();
    plotCurves();
}

bool CompareView::groupSeeds() const {
    return group_seeds_wanted_ && hasSeedGroup(seed_groups_);
}

QColor CompareView::colorOfRun(size_t run_index) const {
    for (size_t g = 0; g < plot_groups_.size(); ++g)
        for (size_t member : plot_groups_[g])
            if (member == run_index) return runColor(g);
    return runColor(run_index);
}

namespace {

double xOf(XAxis axis, const SeedBandPoint& point) {
    switch (axis) {
    case XAxis::Tokens: return point.tokens;
    case XAxis::Step: return static_cast<double>(point.step);
    case XAxis::WallTime: return point.wall_time;
    }
    return 0.0;
}

// QCustomPlot draws NaN as a gap; an infinity would instead blow up the y range.
double plottable(double value) {
    return std::isfinite(value) ? value : qQNaN();
}

QColor withAlpha(QColor color, int alpha) {
    color.setAlpha(alpha);
    return color;
}

// A series' EMA as points at its samples' steps, tokens and wall times: what seedBand takes.
std::vector<MetricPoint> smoothedPoints(const MetricSeries& series) {
    std::vector<MetricPoint> points;
    points.reserve(series.samples().size());
    for (const SeriesSample& sample : series.samples()) {
        MetricPoint point;
        point.step = sample.step;
        point.tokens = static_cast<int64_t>(sample.tokens);
        point.wall_time = sample.wall;
        point.value = sample.smoothed;
        points.push_back(std::move(point));
    }
    return points;
}

}  // namespace

void CompareView::plotRun(size_t run_index, const QColor& color) {
    const XAxis x_axis = axis();
    // The run's series: its points as RunSeries keeps them (non-finite ones as gaps) and their EMA.
    const std::vector<SeriesSample>& samples = runs_->curveSeries(run_index).samples();
    QVector<double> xs, raw, smoothed;
    xs.reserve(static_cast<qsizetype>(samples.size()));
    raw.reserve(xs.capacity());
    smoothed.reserve(xs.capacity());
    for (const SeriesSample& sample : samples) {
        xs << sampleX(sample, x_axis);
        raw << sample.value;
        smoothed << sample.smoothed;
    }
    QCPGraph* raw_graph = plot_->addGraph();
    raw_graph->setPen(QPen(withAlpha(color, 70), 1.0));
    setCurveData(raw_graph, xs, raw, x_axis != XAxis::WallTime);
    QCPGraph* smooth_graph = plot_->addGraph();
    smooth_graph->setPen(QPen(color, 2.0));
    smooth_graph->setName(curves()[run_index].name);
    setCurveData(smooth_graph, xs, smoothed, x_axis != XAxis::WallTime);
    smooth_graph->addToLegend();
}

void CompareView::setCurveData(QCPGraph* graph, const QVector<double>& xs, const QVector<double>& ys, bool sorted) {
    if (!sorted) {
        graph->setData(xs, ys, false);
        return;
    }
    decimated_.push_back(std::make_unique<DecimatedGraph>(graph, std::vector<double>(xs.begin(), xs.end()),
                                                          std::vector<double>(ys.begin(), ys.end())));
}

void CompareView::plotSeedGroup(const std::vector<size_t>& members, const QColor& color) {
    const XAxis x_axis = axis();
    // Each run is smoothed over its full series first: the band then encloses exactly the
    // smoothed lines the runs would show one by one, and the mean line is their mean.
    std::vector<std::vector<MetricPoint>> raw, smoothed;
    for (size_t member : members) {
        raw.push_back(curves()[member].points);
        smoothed.push_back(smoothedPoints(runs_->curveSeries(member)));
    }
    const std::vector<SeedBandPoint> raw_band = seedBand(raw);
    const std::vector<SeedBandPoint> band = seedBand(smoothed);

    QVector<double> raw_xs, raw_mean;
    for (const SeedBandPoint& point : raw_band) {
        raw_xs << xOf(x_axis, point);
        raw_mean << plottable(point.mean);
    }
    QVector<double> xs, lows, highs, means;
    for (const SeedBandPoint& point : band) {
        xs << xOf(x_axis, point);
        lows << plottable(point.min);
        highs << plottable(point.max);
        means << plottable(point.mean);
    }
    const bool sorted = x_axis == XAxis::Step;
    QCPGraph* raw_graph = plot_->addGraph();
    raw_graph->setPen(QPen(withAlpha(color, 70), 1.0));
    setCurveData(raw_graph, raw_xs, raw_mean, sorted);
    QCPGraph* low_graph = plot_->addGraph();
    low_graph->setPen(QPen(withAlpha(color, 90), 0.8));
    low_graph->setData(xs, lows, sorted);
    QCPGraph* high_graph = plot_->addGraph();
    high_graph->setPen(QPen(withAlpha(color, 90), 0.8));
    high_graph->setBrush(withAlpha(color, 45));
    high_graph->setChannelFillGraph(low_graph);
    high_graph->setData(xs, highs, sorted);
    QCPGraph* mean_graph = plot_->addGraph();
    mean_graph->setPen(QPen(color, 2.0));
    mean_graph->setName(tr("%1 (%n seeds)", nullptr, static_cast<int>(members.size())).arg(QString::fromStdString(seedGroupName(curves()[members.front()].name.toStdString()))));
    setCurveData(mean_graph, xs, means, sorted);
    mean_graph->addToLegend();
}

void CompareView::plotCurves() {
    // A live update keeps the ranges the user dragged or zoomed to; anything else rescales.
    const std::vector<RunCurve>& shown = curves();
    const bool keep_ranges = view_moved_by_user_ && !shown.empty();
    decimated_.clear();
    plot_->clearGraphs();
    plot_->legend->clearItems();
    const XAxis x_axis = axis();
    // The groups index runs_; curves of a selection still loading are drawn one by one.
    std::vector<std::vector<size_t>> groups = plot_groups_;
    if (shown.size() != runs_->runs().size()) {
        groups.clear();
        for (size_t i = 0; i < shown.size(); ++i) groups.push_back({i});
    }
    for (size_t g = 0; g < groups.size(); ++g) {
        if (groups[g].size() == 1) plotRun(groups[g].front(), runColor(g));
        else plotSeedGroup(groups[g], runColor(g));
    }
    plot_->legend->setVisible(!shown.empty());
    placeholder_->setVisible(shown.empty());
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis}) axis->setTickLabels(!shown.empty());
    switch (x_axis) {
    case XAxis::Tokens: plot_->xAxis->setLabel(tr("tokens seen")); break;
    case XAxis::Step: plot_->xAxis->setLabel(tr("optimizer step")); break;
    case XAxis::WallTime: plot_->xAxis->setLabel(tr("wall time (s)")); break;
    }
    plot_->xAxis->setNumberPrecision(x_axis == XAxis::WallTime ? 1 : 0);
    const bool banded = std::any_of(groups.begin(), groups.end(),
                                    [](const std::vector<size_t>& members) { return members.size() > 1; });
    plot_->yAxis->setLabel(key_combo_->currentText() +
                           (shown.empty() ? QString()
                            : banded        ? tr("  (EMA 0.6 over raw; seeds: mean, min-max)")
                                            : tr("  (EMA 0.6 over raw)")));
    if (shown.empty()) {
        plot_->xAxis->setRange(0, 1);
        plot_->yAxis->setRange(0, 1);
    } else if (!keep_ranges) {
        plot_->rescaleAxes();
        // A sliver of room keeps the curves off the frame.
        const QCPRange y = plot_->yAxis->range();
        const double pad = y.size() > 0 ? 0.06 * y.size() : std::max(std::abs(y.upper) * 0.05, 1e-9);
        plot_->yAxis->setRange(y.lower - pad, y.upper + pad);
    }
    plot_->replot();
}

QString CompareView::csv() const {
    return curvesCsv(curves());
}

bool CompareView::exportCsv(const QString& path) const {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
    const QByteArray bytes = csv().toUtf8();
    return file.write(bytes) == bytes.size();
}

bool CompareView::exportPlot(const QString& path, int width, int height) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("pdf")) return plot_->savePdf(path, width, height);
    if (suffix == QLatin1String("png")) return plot_->savePng(path, width, height, /*scale=*/1.0);
    return false;
}

void CompareView::exportPlotWithDialog() {
    const QString suggested = QStringLiteral("compare-%1.png").arg(key().replace(QLatin1Char('/'), QLatin1Char('_')));
    QString selected_filter;
    QString path = QFileDialog::getSaveFileName(this, tr("Export plot"), suggested,
                                                tr("PNG image (*.png);;PDF document (*.pdf)"), &selected_filter);
    if (path.isEmpty()) return;
    // A name typed without a suffix takes the one of the chosen filter.
    if (QFileInfo(path).suffix().isEmpty())
        path += selected_filter.contains(QLatin1String("pdf")) ? QStringLiteral(".pdf") : QStringLiteral(".png");
    const int width = std::max(plot_->width(), 800);
    const int height = std::max(plot_->height(), 500);
    if (!exportPlot(path, width, height)) status_label_->setFullText(tr("Cannot write %1 (a .png or .pdf file)").arg(path));
    else status_label_->setFullText(tr("Exported %1").arg(path));
}

void CompareView::exportWithDialog() {
    const QString suggested = QStringLiteral("compare-%1.csv").arg(key().replace(QLatin1Char('/'), QLatin1Char('_')));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export curves"), suggested, tr("CSV files (*.csv)"));
    if (path.isEmpty()) return;
    if (!exportCsv(path)) status_label_->setFullText(tr("Cannot write %1").arg(path));
    else status_label_->setFullText(tr("Exported %1").arg(path));
}

}  // namespace trainbench::gui
