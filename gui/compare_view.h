// CompareView: the selected runs side by side: overlaid curves of one key, a summary table and a config diff.
#pragma once

#include <string>
#include <vector>

#include <QStringList>
#include <QWidget>

#include "compare_summary.h"
#include "curves_csv.h"
#include "trainbench/run_store.h"

class QCheckBox;
class QComboBox;
class QCPItemText;
class QCustomPlot;
class QLabel;
class QPushButton;
class QTableWidget;

namespace trainbench::gui {

class StoreReader;

// Everything is read from the store on a StoreReader's thread: first each run's record, keys
// and summary, then the points of the chosen key. loaded() says both have arrived for the
// latest setRuns() and key; results of a superseded request are dropped.
//
// The x axis defaults to tokens seen: runs that differ in effective batch size line up only
// there. Each run has one colour: its smoothed curve (TensorBoard's debiased EMA, w 0.6) over
// its raw points drawn faintly.
//
// Widgets that tests drive carry object names: compareView, compareKeyCombo, compareAxisCombo,
// comparePlot, compareSummaryTable, configDiffTable, showAllKeysCheck, exportCsvButton,
// compareStatusLabel.
class CompareView : public QWidget {
    Q_OBJECT

public:
    enum class Axis { Tokens, Step, WallTime };
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
    void setAxis(Axis axis);
    Axis axis() const;
    // True once the runs and the curves of the latest request are shown.
    bool isLoaded() const { return loaded_; }

    const std::vector<CompareSummary>& summaries() const { return summaries_; }
    const std::vector<RunCurve>& curves() const { return curves_; }
    // The shown curves as CSV (see curvesCsv); exportCsv writes them to a file.
    QString csv() const;
    bool exportCsv(const QString& path) const;

    static constexpr const char* kDefaultKey = "train/loss";

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
    void exportWithDialog();

    StoreReader* reader_ = nullptr;
    QStringList run_ids_;
    std::vector<RunInfo> runs_;
    std::vector<CompareSummary> summaries_;
    std::vector<RunCurve> curves_;
    int runs_request_ = 0;
    int curves_request_ = 0;
    bool loaded_ = true;

    QComboBox* key_combo_ = nullptr;
    QComboBox* axis_combo_ = nullptr;
    QPushButton* export_button_ = nullptr;
    QLabel* status_label_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QCPItemText* placeholder_ = nullptr;
    QTableWidget* summary_table_ = nullptr;
    QTableWidget* diff_table_ = nullptr;
    QCheckBox* show_all_keys_ = nullptr;
};

}  // namespace trainbench::gui
