// CompareView: the selected runs side by side: overlaid curves of one key, a summary table and a config diff.
#pragma once

#include <cstddef>
#include <memory>

#include <string>
#include <vector>

#include <QColor>
#include <QStringList>
#include <QWidget>

#include "compare/compare_summary.h"
#include "compare/curves_csv.h"
#include "common/elided_label.h"
#include "common/x_axis.h"
#include "plotting/decimated_graph.h"
#include "trainbench/metric_keys.h"
#include "trainbench/run_store.h"

class QCheckBox;
class QComboBox;
class QCPItemText;
class QCustomPlot;
class QCPGraph;
class QLabel;
class QPushButton;
class QTableWidget;

namespace trainbench::gui {

class StoreReader;
class StoreTail;

// Everything is read from the store on a StoreReader's thread: first each run's record, keys
// and summary, then the points of the chosen key. loaded() says both have arrived for the
// latest setRuns() and key; results of a superseded request are dropped.
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
// While a compared run is `running` (trained by this or another process), a StoreTail follows
// it (every kPollIntervalMs, on the tail's reader thread): its points of the shown key after
// the last step shown extend its curve, and once it has left `running` (finished, or
// interrupted: the tail notices a writer that died) its summary is read again. Polling stops
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
    enum SummaryColumn {
        RunName, FinalLoss, BestLoss, TokensPerS, PeakMemory, MicroBatch, Accumulation, World, GlobalBatch, WallTime,
        SummaryColumnCount
    };

    // `store_folder`: the store to read (RunStore::defaultFolder() when empty).
    explicit CompareView(const QString& store_folder = QString(), QWidget* parent = nullptr);

    // Compares these runs (in this order); the same set again changes nothing.
    void setRuns(const QStringList& run_ids);
    const QStringList& runIds() const { return run_ids_; }
    // Shows the curves of `key`; false when no selected run has it.
    bool setKey(const QString& key);
    QString key() const;
    void setAxis(XAxis axis);
    XAxis axis() const;
    // True once the runs and the curves of the latest request are shown.
    bool isLoaded() const { return loaded_; }

    const std::vector<CompareSummary>& summaries() const { return summaries_; }
    const std::vector<RunCurve>& curves() const { return curves_; }
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
    static constexpr int kPollIntervalMs = 1000;

    static constexpr const char* kDefaultKey = metric::kLoss;

Q_SIGNALS:
    void loaded();
    // A run id is not in the store, or the store cannot be read; the runs found are shown.
    void loadFailed(const QString& message);

private:
    // What the query thread reads for one run before the curves.
    struct RunInfo {
        RunRecord record;
        std::vector<std::string> keys;
        CompareSummary summary;
    };
    struct RunsResult {
        std::vector<RunInfo> runs;
        QStringList missing;
    };

    void buildUi();
    void showRuns(RunsResult result);
    void loadCurves();
    void showCurves(std::vector<RunCurve> curves);
    void showSummary();
    void showConfigDiff();
    void plotCurves();
    void plotRun(const RunCurve& curve, const QColor& color);
    // Sorted keys (step, tokens): through a DecimatedGraph; wall time: every point as it is.
    void setCurveData(QCPGraph* graph, const QVector<double>& xs, const QVector<double>& ys, bool sorted);
    void plotSeedGroup(const std::vector<size_t>& members, const QColor& color);
    void updateGrouping();
    QColor colorOfRun(size_t run_index) const;
    void showPointCount();
    void exportWithDialog();
    void exportPlotWithDialog();
    // What setRuns reads of one run, and what is read again once it has left `running`.
    static RunInfo readRunInfo(RunStore& store, RunRecord record);
    // A StoreTail for each compared run that is `running`, replacing the tails of before.
    void followRunningRuns();
    void stopFollowing();
    void appendLivePoints(size_t run_index, const QVector<MetricPoint>& points);
    void onRunLeftRunning(size_t run_index);
    void dropTail(size_t run_index);

    StoreReader* reader_ = nullptr;
    QStringList run_ids_;
    std::vector<RunInfo> runs_;
    std::vector<CompareSummary> summaries_;
    std::vector<RunCurve> curves_;
    int runs_request_ = 0;
    int curves_request_ = 0;
    bool loaded_ = true;
    // Seed groups of runs_ (indices), and what is plotted: those groups, or one run each.
    std::vector<std::vector<size_t>> seed_groups_;
    std::vector<std::vector<size_t>> plot_groups_;
    bool group_seeds_wanted_ = true;
    // Parallel to runs_ while curves are shown: the tail of each running run, else null.
    std::vector<StoreTail*> tails_;
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
