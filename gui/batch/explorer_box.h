// ExplorerBox: the explorer's box: every split of the global batch measured, its table, chart and recommendation.
#pragma once

#include <cstdint>
#include <string>

#include <QGroupBox>
#include <QString>

#include "batch/explorer_worker.h"  // ExploreRow's metatype, which recommendationChosen carries
#include "trainbench/batch_explorer.h"
#include "trainbench/run_config.h"

class QCheckBox;
class QLabel;
class QPushButton;
class QTableView;

namespace trainbench::gui {

class ExplorerChart;
class ExplorerTableModel;

// Measured rather than planned: one short training session per split (and, "over memory
// layouts", per ZeRO stage and recomputation mode) of the shown config's global batch, on this
// machine whatever the target.
//
// The box explores the config its owner shows (setRunConfig, after every edit) and keeps its
// rows only while they were measured for that config. It does not edit the config: Apply
// recommendation hands the recommended row to its owner (recommendationChosen), who applies it.
//
// A line under the status names the precision the splits are measured in and, side by side, the
// planner's largest m on this machine under each precision (precisionFits against the same
// budget): what another precision would allow, without measuring it.
//
// Object names: exploreButton, stopExploreButton, applyRecommendationButton, exploreLayoutsCheck,
// explorerStatusLabel, explorerPrecisionLabel, explorerTable, explorerChart.
class ExplorerBox : public QGroupBox {
    Q_OBJECT

public:
    explicit ExplorerBox(QWidget* parent = nullptr);
    ~ExplorerBox() override;

    // The config to explore and the per-rank budget its rows are measured against
    // (BatchPanel::memoryBudgetBytes); the buttons and the status follow it.
    void setRunConfig(const RunConfig& config, int64_t budget_bytes);
    // While a run is live the explorer cannot start, nor its recommendation apply.
    void setRunLive(bool live);
    // Training steps per explored split (the first is warm-up and not in the rate).
    void setStepsPerRow(int64_t steps) { steps_per_row_ = steps; }
    bool isExploring() const;
    ExplorerTableModel* model() const { return model_; }
    ExplorerChart* chart() const { return chart_; }

    // Starts measuring every split of the config's global batch; false while a run is live or
    // an exploration is already running.
    bool explore();
    // Ends the exploration after the split being measured.
    void stopExploring();
    // Hands the finished exploration's recommended row to the owner (recommendationChosen);
    // false when there is none for the shown config's global batch.
    bool applyRecommendation();

Q_SIGNALS:
    // The recommended row, to be applied to the config: its m and K, and its layout and offload.
    void recommendationChosen(const trainbench::ExploreRow& row);
    void exploringChanged(bool exploring);
    // An exploration ended, with its rows in model() (and a recommendation, if any fit).
    void explorationFinished();

private:
    void buildUi();
    void updateControls();
    void setStatus(const QString& text, bool error = false);
    void showPrecisions();
    void onRowExplored(const ExploreRow& row);
    void onExploreFinished(const ExploreResult& result, bool cancelled);
    void onExploreFailed(const QString& message);
    // Whether the rows on show were measured for the shown config (any split of the same B).
    bool resultsMatchConfig() const;

    RunConfig config_;
    int64_t budget_bytes_ = 0;
    int64_t previewed_per_rank_ = -1;  // the per-rank batch whose splits the empty chart shows
    bool run_live_ = false;
    int64_t steps_per_row_ = 3;
    int64_t expected_rows_ = 0;
    std::string explored_key_;  // the explored config with its split normalised away
    bool explored_over_layouts_ = false;  // ... and its layout too
    bool have_result_ = false;  // an exploration has ended (its rows, or why it failed, are shown)
    bool stop_requested_ = false;
    QString result_status_;  // what the finished exploration found, shown while it matches the config
    bool result_is_error_ = false;

    ExplorerWorker* worker_ = nullptr;
    ExplorerTableModel* model_ = nullptr;
    ExplorerChart* chart_ = nullptr;
    QPushButton* explore_button_ = nullptr;
    QPushButton* stop_button_ = nullptr;
    QPushButton* apply_button_ = nullptr;
    QCheckBox* layouts_check_ = nullptr;
    QLabel* status_label_ = nullptr;
    QLabel* precision_label_ = nullptr;
    QTableView* table_ = nullptr;
};

}  // namespace trainbench::gui
