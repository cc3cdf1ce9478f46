// CompareView: the selected runs side by side: overlaid curves of one key, a summary table and a config diff.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <QColor>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "compare/compare_runs.h"
#include "compare/compare_summary.h"
#include "compare/curves_csv.h"
#include "common/elided_label.h"
#include "common/x_axis.h"
#include "plotting/decimated_graph.h"
#include "trainbench/metric_keys.h"

class QCheckBox;
class QComboBox;
class QCPItemText;
class QCustomPlot;
class QCPGraph;
class QLabel;
class QPushButton;
class QTableWidget;

namespace trainbench::gui {

// The widgets only: what they show is read and followed by a CompareRuns (each run's record,
// keys and summary, then the points of the chosen key, each curve through a RunSeries as the
// live plots read theirs), the summary's cells are CompareSummaryTable's and the config diff is
// configDiff's. loaded() says the runs and the curves of the latest setRuns() and key have
// arrived; results of a superseded request are dropped.
//
// The x axis defaults to tokens seen: runs that differ in effective batch size line up only
// there. Each run has one colour: its smoothed curve (TensorBoard's debiased EMA, w 0.6) over
// its raw points drawn faintly.
//
// Runs whose configs differ only in train.seed / data.seed form a seed group (groupSeeds(),
// on by default when the selection has one): one colour, drawn as four graphs in this order:
// the raw mean (faint), the lowest and the highest of the runs' smoothed curves (the band,
// filled between them) and the mean of the smoothed curves, named "name (n seeds)" in the
// legend. A run alone keeps its two graphs: raw (faint), then smoothed.
//
// While a compared run is `running` (trained by this or another process), its CompareRuns
// follows it (every kPollIntervalMs): its points of the shown key after the last step shown
// extend its curve, and once it has left `running` its summary is read again. Polling stops
// when no compared run is running any more.
//
// Widgets that tests drive carry object names: compareView, compareKeyCombo, compareAxisCombo,
// groupSeedsCheck, comparePlot, compareSummaryTable, configDiffTable, showAllKeysCheck,
// exportCsvButton, exportPlotButton, compareStatusLabel.
class CompareView : public QWidget {
    Q_OBJECT

public:
    // The axis box lists tokens seen first, then the optimizer step and the wall time.
    using Axis = XAxis;
    // The summary table's columns (CompareView::RunName, ...).
    using SummaryColumn = CompareSummaryTable::Column;
    using enum CompareSummaryTable::Column;

    // `store_folder`: the store to read (RunStore::defaultFolder() when empty).
    explicit CompareView(const QString& store_folder = QString(), QWidget* parent = nullptr);

    // Compares these runs (in this order); the same set again changes nothing.
    void setRuns(const QStringList& run_ids);
    const QStringList& runIds() const { return runs_->runIds(); }
    // Shows the curves of `key`; false when no selected run has it.
    bool setKey(const QString& key);
    QString key() const;
    void setAxis(XAxis axis);
    XAxis axis() const;
    // True once the runs and the curves of the latest request are shown.
    bool isLoaded() const { return runs_->isLoaded(); }

    const std::vector<CompareSummary>& summaries() const { return runs_->summaries(); }
    // Each run's curve as stored (what the CSV writes); drawn through runs()'s series.
    const std::vector<RunCurve>& curves() const { return runs_->curves(); }
    // What the view shows, read and followed.
    const CompareRuns& runs() const { return *runs_; }
    // The shown curves as CSV (see curvesCsv); exportCsv writes them to a file.
    QString csv() const;
    bool exportCsv(const QString& path) const;
    // The plot as it is shown, `width` x `height` pixels: PDF when `path` ends in .pdf, PNG when
    // in .png; false for another suffix or a file that cannot be written.
    bool exportPlot(const QString& path, int width, int height);

    // Draws each seed group as its mean and band (when the selection has one).
    void setGroupSeeds(bool group);
    bool groupSeeds() const;
    // The shown runs by plotted line, indices into curves(): one per run, or per seed group.
    const std::vector<std::vector<size_t>>& plotGroups() const { return plot_groups_; }

    // Whether a compared run is running, so new points are being fetched.
    bool isPolling() const;
    static constexpr int kPollIntervalMs = CompareRuns::kPollIntervalMs;

    static constexpr const char* kDefaultKey = metric::kLoss;

Q_SIGNALS:
    void loaded();
    // A run id is not in the store, or the store cannot be read; the runs found are shown.
    void loadFailed(const QString& message);

private:
    void buildUi();
    // The runs arrived: their summary, config diff, seed groups and keys; then their curves.
    void showRuns(const QStringList& missing);
    void loadCurves();
    void showCurves();
    void showSummary();
    void showConfigDiff();
    void plotCurves();
    void plotRun(size_t run_index, const QColor& color);
    // Sorted keys (step, tokens): through a DecimatedGraph; wall time: every point as it is.
    void setCurveData(QCPGraph* graph, const QVector<double>& xs, const QVector<double>& ys, bool sorted);
    void plotSeedGroup(const std::vector<size_t>& members, const QColor& color);
    void updateGrouping();
    QColor colorOfRun(size_t run_index) const;
    void showPointCount();
    void exportWithDialog();
    void exportPlotWithDialog();

    CompareRuns* runs_ = nullptr;
    // Seed groups of the runs (indices), and what is plotted: those groups, or one run each.
    std::vector<std::vector<size_t>> seed_groups_;
    std::vector<std::vector<size_t>> plot_groups_;
    bool group_seeds_wanted_ = true;
    // Set once the user drags or zooms: live updates then keep the ranges they chose.
    bool view_moved_by_user_ = false;

    QComboBox* key_combo_ = nullptr;
    QComboBox* axis_combo_ = nullptr;
    QPushButton* export_button_ = nullptr;
    QPushButton* export_plot_button_ = nullptr;
    QCheckBox* group_seeds_check_ = nullptr;
    ElidedLabel* status_label_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    // The long curves of plot_, refilled for the view before each redraw.
    std::vector<std::unique_ptr<DecimatedGraph>> decimated_;
    QCPItemText* placeholder_ = nullptr;
    QTableWidget* summary_table_ = nullptr;
    QTableWidget* diff_table_ = nullptr;
    QCheckBox* show_all_keys_ = nullptr;
};

}  // namespace trainbench::gui
